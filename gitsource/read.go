package gitsource

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
)

var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ErrPathMissing is the error of a configured path that is not in the
// commit's tree.
var ErrPathMissing = errors.New("not found")

// objectError is a git object of the commit that could not be read: the
// repository holding it is damaged or incomplete (the git source then
// clones its cache again), as opposed to a path that is not there or a
// manifest that does not decode.
type objectError struct{ err error }

func (e *objectError) Error() string { return e.err.Error() }
func (e *objectError) Unwrap() error { return e.err }

// isObjectError reports whether err comes from reading git objects.
func isObjectError(err error) bool {
	var oe *objectError
	return errors.As(err, &oe)
}

// ReadCommit decodes the manifests at paths (in the order given) inside
// commit's tree, as the file source reads a folder: hidden entries skipped,
// .yaml/.yml/.json only, sorted by path. Origins name files by their path in
// the repository. A path that does not exist is an error; decode errors are
// returned as a *multierror.Error of *manifest.Error with everything that
// did decode. Any other error (an object that cannot be read) means the
// repository is damaged.
//
// A folder holding a Compose file is a Compose project, rendered by r (nil:
// a project is an error); everything below it is the project's data, never
// native manifests.
func ReadCommit(ctx context.Context, commit *object.Commit, paths []string, source string, r *project.Renderer) ([]manifest.Sourced, int, error) {
	root, err := commit.Tree()
	if err != nil {
		return nil, 0, &objectError{fmt.Errorf("read tree of %s: %w", commit.Hash, err)}
	}
	var (
		out   []manifest.Sourced
		errs  *multierror.Error
		files int
		// contexts holds the builds' files, read once.
		contexts *sources.ContextCache
	)
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		list, err := listFiles(root, p)
		if err != nil {
			return nil, 0, fmt.Errorf("path %q at commit %s: %w", p, commit.Hash.String()[:12], err)
		}
		for _, f := range list {
			if len(out) > manifest.MaxSourceManifests {
				// Reading stops here: the source is refused whole.
				return out, files, multierror.Append(errs, manifest.TooManyInSource(manifest.Origin{Source: source, File: f.path}))
			}
			if f.project != nil {
				ms, n, err := readProject(ctx, r, f, project.Options{Source: source, Dir: f.path, Name: projectName(f.path, source)})
				if isObjectError(err) {
					return nil, 0, err
				}
				files += n
				out = append(out, ms...)
				if err != nil {
					errs = multierror.Append(errs, err)
				}
				continue
			}
			origin := manifest.Origin{Source: source, File: f.path}
			if f.size > manifest.MaxSize {
				errs = multierror.Append(errs, &manifest.Error{Origin: origin, Detail: fmt.Sprintf("%d bytes: %v of %d bytes", f.size, manifest.ErrTooLarge, manifest.MaxSize), Err: manifest.ErrTooLarge})
				continue
			}
			data, err := readBlob(f.blob)
			if err != nil {
				return nil, 0, &objectError{fmt.Errorf("read %s at %s: %w", f.path, commit.Hash.String()[:12], err)}
			}
			files++
			ms, err := manifest.Decode(data, origin)
			if contexts == nil {
				contexts = sources.NewContextCache()
			}
			resolveBuilds(ms, root, f.path, contexts)
			out = append(out, ms...)
			if err != nil {
				errs = multierror.Append(errs, err)
			}
		}
	}
	if len(out) > manifest.MaxSourceManifests && !errors.Is(errs.ErrorOrNil(), manifest.ErrTooManyManifests) {
		errs = multierror.Append(errs, manifest.TooManyInSource(manifest.Origin{Source: source}))
	}
	return out, files, errs.ErrorOrNil()
}

type treeFile struct {
	path string
	size int64
	blob *object.Blob
	// project is the tree of a Compose project's folder (path); blob is
	// then nil.
	project *object.Tree
}

// projectName is the name of a project at dir when its file sets none:
// the folder's name, or the source's for a project at the root.
func projectName(dir, source string) string {
	if dir == "" || dir == "." {
		return source
	}
	return path.Base(dir)
}

// readProject bundles the project folder f of the commit and renders it
// with r. A git object that cannot be read is an *objectError.
func readProject(ctx context.Context, r *project.Renderer, f treeFile, opts project.Options) ([]manifest.Sourced, int, error) {
	b, err := bundleTree(f.project)
	if err != nil {
		if isObjectError(err) {
			return nil, 0, err
		}
		return nil, len(b.Files), projectError(opts, err)
	}
	if r == nil {
		return nil, len(b.Files), projectError(opts, errors.New("compose projects are not read here (no renderer)"))
	}
	b.Options = opts
	ms, err := r.Render(ctx, b)
	return ms, len(b.Files), err
}

func projectError(opts project.Options, err error) error {
	return &multierror.Error{Errors: []error{&manifest.Error{Origin: manifest.Origin{Source: opts.Source, File: opts.Dir}, Detail: err.Error(), Err: err}}}
}

// bundleTree reads every file below a project's folder in the commit
// (hidden files included, hidden folders not), with the limits of a
// manifest file; a symlink or an oversized file is bundled as its error.
func bundleTree(tree *object.Tree) (project.Bundle, error) {
	var b project.Bundle
	err := walkTree(tree, func(name string, entry object.TreeEntry) error {
		if entry.Mode == filemode.Dir || entry.Mode == filemode.Submodule || inHiddenFolder(name) {
			return nil
		}
		if entry.Mode == filemode.Symlink {
			return b.Add(name, nil, fmt.Errorf("%s is a symlink; files in git must be regular files", name))
		}
		f, err := tree.TreeEntryFile(&entry)
		if err != nil {
			return &objectError{err}
		}
		if f.Size > manifest.MaxSize {
			return b.Add(name, nil, fmt.Errorf("%s: %d bytes: %w of %d bytes", name, f.Size, manifest.ErrTooLarge, manifest.MaxSize))
		}
		data, err := readBlob(&f.Blob)
		if err != nil {
			return &objectError{err}
		}
		if err := b.Add(name, data, nil); err != nil {
			return err
		}
		if entry.Mode == filemode.Executable {
			b.SetExecutable(name)
		}
		return nil
	})
	return b, err
}

// listFiles lists the manifest files of path p in the tree. Failures to
// read a git object are *objectError; a path that is not there is
// ErrPathMissing.
func listFiles(root *object.Tree, p string) ([]treeFile, error) {
	clean := strings.Trim(path.Clean("/"+p), "/")
	tree := root
	if clean != "" {
		entry, err := root.FindEntry(clean)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return nil, ErrPathMissing
		}
		if err != nil {
			return nil, &objectError{err}
		}
		switch entry.Mode {
		case filemode.Dir:
			if tree, err = root.Tree(clean); err != nil {
				return nil, &objectError{err}
			}
			if treeIsProject(tree) {
				return []treeFile{{path: clean, project: tree}}, nil
			}
		case filemode.Symlink:
			return nil, errors.New("is a symlink; manifests in git must be regular files")
		case filemode.Submodule:
			return nil, errors.New("is a submodule; manifests in git must be regular files")
		default:
			if dir := path.Dir(clean); project.IsProjectFile(path.Base(clean)) {
				// A Compose file named as the path: its folder is the project.
				pt := root
				if dir != "." {
					if pt, err = root.Tree(dir); err != nil {
						return nil, &objectError{err}
					}
				}
				return []treeFile{{path: dir, project: pt}}, nil
			}
			f, err := root.File(clean)
			if err != nil {
				return nil, &objectError{err}
			}
			return []treeFile{{path: clean, size: f.Size, blob: &f.Blob}}, nil
		}
	}
	return listTree(tree, clean)
}

// listTree lists the manifest files and Compose projects of the folder
// tree at path clean ("" for the root).
func listTree(tree *object.Tree, clean string) ([]treeFile, error) {
	if treeIsProject(tree) {
		return []treeFile{{path: cmp.Or(clean, "."), project: tree}}, nil
	}
	projects, err := projectDirs(tree)
	if err != nil {
		return nil, err
	}
	join := func(name string) string {
		if clean == "" {
			return name
		}
		return clean + "/" + name
	}
	var out []treeFile
	for _, dir := range projects {
		pt, err := tree.Tree(dir)
		if err != nil {
			return nil, &objectError{err}
		}
		out = append(out, treeFile{path: join(dir), project: pt})
	}
	err = walkTree(tree, func(name string, entry object.TreeEntry) error {
		if hidden(name) || entry.Mode == filemode.Dir || entry.Mode == filemode.Submodule || underAny(name, projects) {
			return nil
		}
		if !manifestExts[strings.ToLower(path.Ext(name))] {
			return nil
		}
		if entry.Mode == filemode.Symlink {
			return fmt.Errorf("%s is a symlink; manifests in git must be regular files", join(name))
		}
		blob, err := tree.TreeEntryFile(&entry)
		if err != nil {
			return &objectError{err}
		}
		out = append(out, treeFile{path: join(name), size: blob.Size, blob: &blob.Blob})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
}

// walkTree calls fn for every entry below tree, depth first; a git object
// that cannot be read is an *objectError.
func walkTree(tree *object.Tree, fn func(name string, entry object.TreeEntry) error) error {
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &objectError{err}
		}
		if err := fn(name, entry); err != nil {
			return err
		}
	}
}

// treeIsProject reports whether tree holds a Compose file.
func treeIsProject(tree *object.Tree) bool {
	for _, e := range tree.Entries {
		if e.Mode != filemode.Dir && project.IsProjectFile(e.Name) {
			return true
		}
	}
	return false
}

// projectDirs lists the Compose project folders below tree (not hidden,
// not inside another project), sorted.
func projectDirs(tree *object.Tree) ([]string, error) {
	var dirs []string
	err := walkTree(tree, func(name string, entry object.TreeEntry) error {
		if entry.Mode != filemode.Dir && project.IsProjectFile(path.Base(name)) && !hidden(name) && path.Dir(name) != "." {
			dirs = append(dirs, path.Dir(name))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(dirs)
	var out []string
	for _, d := range dirs {
		if len(out) > 0 && (out[len(out)-1] == d || underAny(d, out)) {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// underAny reports whether name lies inside one of the folders dirs.
func underAny(name string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(name, d+"/") {
			return true
		}
	}
	return false
}

// inHiddenFolder reports whether name lies in a hidden folder (a hidden
// file itself, .env, does not).
func inHiddenFolder(name string) bool {
	parts := strings.Split(name, "/")
	for _, part := range parts[:len(parts)-1] {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

func hidden(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if strings.HasPrefix(part, ".") {
			return true
		}
	}
	return false
}

func readBlob(b *object.Blob) ([]byte, error) {
	r, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return manifest.ReadLimited(r, manifest.MaxSize)
}
