package gitsource

import (
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
func ReadCommit(commit *object.Commit, paths []string, source string) ([]manifest.Sourced, int, error) {
	root, err := commit.Tree()
	if err != nil {
		return nil, 0, &objectError{fmt.Errorf("read tree of %s: %w", commit.Hash, err)}
	}
	var (
		out   []manifest.Sourced
		errs  *multierror.Error
		files int
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
			out = append(out, ms...)
			if err != nil {
				errs = multierror.Append(errs, err)
			}
		}
	}
	return out, files, errs.ErrorOrNil()
}

type treeFile struct {
	path string
	size int64
	blob *object.Blob
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
		case filemode.Symlink:
			return nil, errors.New("is a symlink; manifests in git must be regular files")
		case filemode.Submodule:
			return nil, errors.New("is a submodule; manifests in git must be regular files")
		default:
			f, err := root.File(clean)
			if err != nil {
				return nil, &objectError{err}
			}
			return []treeFile{{path: clean, size: f.Size, blob: &f.Blob}}, nil
		}
	}
	var out []treeFile
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &objectError{err}
		}
		if hidden(name) || entry.Mode == filemode.Dir || entry.Mode == filemode.Submodule {
			continue
		}
		if !manifestExts[strings.ToLower(path.Ext(name))] {
			continue
		}
		full := name
		if clean != "" {
			full = clean + "/" + name
		}
		if entry.Mode == filemode.Symlink {
			return nil, fmt.Errorf("%s is a symlink; manifests in git must be regular files", full)
		}
		blob, err := tree.TreeEntryFile(&entry)
		if err != nil {
			return nil, &objectError{err}
		}
		out = append(out, treeFile{path: full, size: blob.Size, blob: &blob.Blob})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, nil
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
