package sources

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources/tree"
)

// ReadTree reads paths (files or folders, relative to base when base is not
// "") as one source named source, with the tree reader (package
// sources/tree). Folders are walked in sorted order; hidden files and
// folders are skipped; only .yaml, .yml and .json files are read. A folder
// holding a Compose file (compose.yaml, ...) is a Compose project, read
// with host's settings: everything below it is the project's data, never
// native manifests. Origins name files relative to base (or as given when
// base is "").
//
// A path that does not exist, an unreadable file or a symlink loop is an
// error. Below a folder, a file whose resolved path leaves the folder (its
// own symlinks resolved: "current -> release-N" is the folder release-N) is
// an error naming the file, and it is never opened: a link to a root-only
// file outside must not show its lines in an error. Decode errors of
// individual files are returned as a *multierror.Error of *manifest.Error
// together with everything that did decode; callers that need an atomic
// set must treat any error as failure.
//
// Projects are rendered by r (nil: a project is an error saying so).
func ReadTree(ctx context.Context, base string, paths []string, source string, r *project.Renderer) (manifest.Snapshot, error) {
	rd := tree.NewReader(tree.Options{Source: source, Renderer: r, Of: "the source"})
	var opened []*folderFS
	defer func() {
		for _, f := range opened {
			f.close()
		}
	}()
	folder := func(dir string) *folderFS {
		f := &folderFS{dir: dir}
		opened = append(opened, f)
		return f
	}
	var baseBuilds func() (fs.FS, error)
	if base != "" {
		baseBuilds = folder(base).builds
	}
	var roots []tree.Root
	for _, p := range paths {
		full := p
		if base != "" && !filepath.IsAbs(p) {
			full = filepath.Join(base, p)
		}
		root, err := folderRoot(full, base, baseBuilds, folder)
		if err != nil {
			rd.Fail(&manifest.Error{Origin: manifest.Origin{Source: source, File: display(base, full)}, Detail: err.Error()})
			continue
		}
		roots = append(roots, root)
	}
	for _, root := range roots {
		// A folder's tree has no error that fails the whole read.
		_ = rd.Read(ctx, root)
	}
	snap, err := rd.Result(ctx)
	snap.Name = source
	return snap, err
}

// folderRoot is source path full as the tree reader reads it: the path
// itself when it is a file (a Compose file: its folder, the project),
// else the manifest files below it. A path that is a symlink to a folder
// (a checkout deployed as "current -> release-N"), or below one, is read
// as its resolved folder, which is the root its files must stay in; the
// files are named below the path as given, relative to base. A build's
// context is a folder of base (baseBuilds) when there is one, else of the
// path's folder. folder opens a folder's fs.FS.
func folderRoot(full, base string, baseBuilds func() (fs.FS, error), folder func(dir string) *folderFS) (tree.Root, error) {
	fi, err := os.Stat(full)
	if err != nil {
		return tree.Root{}, fmt.Errorf("%s: %w", "stat", unwrapPath(err))
	}
	dir, entries := full, []tree.Entry{{Path: ".", Project: true}}
	if !fi.IsDir() {
		named := !project.IsProjectFile(filepath.Base(full))
		if named && !namedComposeFile(full) {
			return fileRoot(full, base, baseBuilds), nil
		}
		// A Compose file named as the path: its folder is the project.
		dir = filepath.Dir(full)
		if named {
			entries[0].File = filepath.Base(full)
		}
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return tree.Root{}, fmt.Errorf("%s: %w", "resolve symlink", unwrapPath(err))
	}
	fsys := folder(resolved)
	if fi.IsDir() {
		if entries, err = tree.List(fsys, "."); err != nil {
			return tree.Root{}, err
		}
	}
	named := func(p string) string { return display(base, filepath.Join(dir, filepath.FromSlash(p))) }
	root := tree.Root{FS: fsys, Entries: entries, Name: named, Folder: folderName(dir), Builds: fsys.builds}
	if base != "" {
		root.Builds, root.BuildPath = baseBuilds, named
	}
	return root, nil
}

// namedComposeFile reports whether the file at full, named as a source
// path by a name Compose does not look for but a Compose name all the same
// (project.ComposeName: docker-compose.prod.yml), is a Compose file by its
// content (project.LooksLikeCompose), as `docker compose -f` would take
// it. The file is opened without blocking (a FIFO put in its place) and
// read at most manifest.MaxSize+1 bytes, whatever it is by then. A file
// over manifest.MaxSize, or one that cannot be read, is left to the
// manifest reader, which says why.
func namedComposeFile(full string) bool {
	if !project.ComposeName(filepath.Base(full)) {
		return false
	}
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > manifest.MaxSize {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, manifest.MaxSize+1))
	return err == nil && len(data) <= manifest.MaxSize && project.LooksLikeCompose(data)
}

// fileRoot is source path full that is one manifest file, read wherever
// its links lead (the host's configuration names it). Its builds'
// contexts are folders of base; without one it has no folder to build
// from.
func fileRoot(full, base string, baseBuilds func() (fs.FS, error)) tree.Root {
	name := display(base, full)
	named := func(string) string { return name }
	root := tree.Root{FS: pathFS(filepath.Dir(full)), Entries: []tree.Entry{{Path: filepath.Base(full)}}, Name: named}
	if base != "" {
		root.Builds, root.BuildPath = baseBuilds, named
	}
	return root
}

func display(base, p string) string {
	if base == "" {
		return p
	}
	if rel, err := filepath.Rel(base, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

// folderName is the name of folder dir, "." and ".." resolved.
func folderName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return filepath.Base(abs)
	}
	return filepath.Base(dir)
}
