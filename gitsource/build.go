package gitsource

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	"github.com/hostlet/hostlet/sources"
)

// treeFolder is folder dir of a commit's tree as a build context.
type treeFolder struct {
	root  *object.Tree
	dir   string
	cache *sources.ContextCache
}

func (t treeFolder) ReadDir(name string) ([]buildctx.Entry, error) {
	p := path.Join(t.dir, name)
	tree := t.root
	if p != "." {
		var err error
		if tree, err = t.root.Tree(p); err != nil {
			if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
				return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
			}
			return nil, &objectError{err}
		}
	}
	out := make([]buildctx.Entry, 0, len(tree.Entries))
	for _, e := range tree.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		out = append(out, buildctx.Entry{Name: e.Name, Dir: e.Mode == filemode.Dir, Exec: e.Mode == filemode.Executable, Link: e.Mode == filemode.Symlink})
	}
	return out, nil
}

func (t treeFolder) ReadFile(name string) ([]byte, error) {
	p := path.Join(t.dir, name)
	f, err := t.root.File(p)
	if err != nil {
		if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
			return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
		}
		return nil, &objectError{err}
	}
	switch {
	case f.Mode == filemode.Symlink:
		return nil, errors.New("a symbolic link; links are not followed in a build context")
	case f.Size > manifest.MaxSize:
		return nil, fmt.Errorf("%d bytes: %w of %d bytes", f.Size, manifest.ErrTooLarge, manifest.MaxSize)
	}
	return t.cache.Read(p, func() ([]byte, error) {
		data, err := readBlob(&f.Blob)
		if err != nil {
			return nil, &objectError{err}
		}
		return data, nil
	})
}

// resolveBuilds reads the builds of the native manifests of file rel in
// the commit's tree root: a context is relative to the file's folder and
// must stay in the repository.
func resolveBuilds(ms []manifest.Sourced, root *object.Tree, rel string, cache *sources.ContextCache) {
	for i := range ms {
		sources.ResolveBuilds(&ms[i], func(ctx string) (buildctx.Folder, string, error) {
			p := path.Join(path.Dir(rel), ctx)
			if path.IsAbs(ctx) || !fs.ValidPath(p) {
				return nil, "", errors.New("must be a folder of the repository, relative to the manifest's file")
			}
			return treeFolder{root: root, dir: p, cache: cache}, p, nil
		}, io.Discard)
	}
}
