package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources/tree"
)

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
// commit's tree with the tree reader (package sources/tree), as the file
// source reads a folder: hidden entries skipped, .yaml/.yml/.json only,
// sorted by path; symlinks are refused. Origins name files by their path
// in the repository. A path that does not exist is an error; decode errors
// are returned as a *multierror.Error of *manifest.Error with everything
// that did decode. Any other error (an object that cannot be read) means
// the repository is damaged.
//
// A folder holding a Compose file is a Compose project, rendered by r (nil:
// a project is an error); everything below it is the project's data, never
// native manifests. A project at the repository's root is named after the
// source.
func ReadCommit(ctx context.Context, commit *object.Commit, paths []string, source string, r *project.Renderer) ([]manifest.Sourced, int, error) {
	root, err := commit.Tree()
	if err != nil {
		return nil, 0, &objectError{fmt.Errorf("read tree of %s: %w", commit.Hash, err)}
	}
	short := commit.Hash.String()[:12]
	fsys := newCommitFS(root, short)
	rd := tree.NewReader(tree.Options{Source: source, Renderer: r, Fatal: isObjectError, Of: "the repository", BoundNamesNext: true})
	builds := func() (fs.FS, error) { return fsys, nil }
	if len(paths) == 0 {
		paths = []string{"."}
	}
	for _, p := range paths {
		entries, err := listPath(fsys, root, p)
		if err != nil {
			return nil, 0, fmt.Errorf("path %q at commit %s: %w", p, short, err)
		}
		if err := rd.Read(ctx, tree.Root{FS: fsys, Entries: entries, Folder: source, Builds: builds}); err != nil {
			return nil, 0, err
		}
		if rd.Full() {
			// Reading stops here: the source is refused whole.
			break
		}
	}
	snap, err := rd.Result(ctx)
	return snap.Manifests, snap.Files, err
}

// listPath lists the manifest files of path p in the tree. Failures to
// read a git object are *objectError; a path that is not there is
// ErrPathMissing.
func listPath(fsys commitFS, root *object.Tree, p string) ([]tree.Entry, error) {
	clean := strings.Trim(path.Clean("/"+p), "/")
	if clean == "" {
		return tree.List(fsys, ".")
	}
	entry, err := root.FindEntry(clean)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, ErrPathMissing
	}
	if err != nil {
		return nil, &objectError{err}
	}
	switch entry.Mode {
	case filemode.Dir:
		return tree.List(fsys, clean)
	case filemode.Symlink:
		return nil, errors.New("is a symlink; manifests in git must be regular files")
	case filemode.Submodule:
		return nil, errors.New("is a submodule; manifests in git must be regular files")
	}
	if project.IsProjectFile(path.Base(clean)) {
		// A Compose file named as the path: its folder is the project.
		return []tree.Entry{{Path: path.Dir(clean), Project: true}}, nil
	}
	f, err := root.File(clean)
	if err != nil {
		return nil, &objectError{err}
	}
	if project.ComposeName(path.Base(clean)) && namedComposeFile(f) {
		// The same by a name of its own (docker-compose.prod.yml).
		return []tree.Entry{{Path: path.Dir(clean), Project: true, File: path.Base(clean)}}, nil
	}
	return []tree.Entry{{Path: clean, Size: f.Size}}, nil
}

// namedComposeFile reports whether a file a source path names by a name
// Compose does not look for is a Compose file by its content
// (project.LooksLikeCompose). A file over manifest.MaxSize, or one that
// cannot be read, is left to the manifest reader, which says why.
func namedComposeFile(f *object.File) bool {
	if f.Size > manifest.MaxSize {
		return false
	}
	r, err := f.Reader()
	if err != nil {
		return false
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, manifest.MaxSize+1))
	return err == nil && len(data) <= manifest.MaxSize && project.LooksLikeCompose(data)
}
