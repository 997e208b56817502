package gitsource

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hostlet/hostlet/manifest"
)

// commitFS is a commit's tree as the fs.FS the tree reader reads (package
// sources/tree): git's 100755 is an executable file (mode 0755); a
// symlink is listed as one but never followed (Stat and Open refuse it);
// submodules are not there; a blob over manifest.MaxSize is refused
// before it is read. A git object that cannot be read is an
// *objectError.
type commitFS struct {
	root *object.Tree
	// dir is the folder of root this is ("" for all of it), for Sub.
	dir string
	// commit is the commit's short hash, in errors.
	commit string
	// cache holds the blobs and folders looked up, for one read.
	cache *commitCache
}

// commitCache is what one read of a commit has looked up: each blob (its
// object's header read) and each folder's tree once.
type commitCache struct {
	blobs map[plumbing.Hash]*object.Blob
	trees map[string]*object.Tree
}

func newCommitFS(root *object.Tree, commit string) commitFS {
	return commitFS{root: root, commit: commit, cache: &commitCache{blobs: map[plumbing.Hash]*object.Blob{}, trees: map[string]*object.Tree{}}}
}

// blob is entry e's blob.
func (c commitFS) blob(e *object.TreeEntry) (*object.Blob, error) {
	if b := c.cache.blobs[e.Hash]; b != nil {
		return b, nil
	}
	f, err := c.root.TreeEntryFile(e)
	if err != nil {
		return nil, &objectError{err}
	}
	c.cache.blobs[e.Hash] = &f.Blob
	return &f.Blob, nil
}

// full is name's path in the commit's tree ("" for its root).
func (c commitFS) full(name string) string {
	if name == "." {
		return c.dir
	}
	return path.Join(c.dir, name)
}

// entry finds name: nil for the root folder. A path that is not in the
// tree (through a file, too) does not exist.
func (c commitFS) entry(op, name string) (*object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p := c.full(name)
	if p == "" {
		return nil, nil
	}
	parent, err := c.treeAt(op, name, parentOf(p))
	if err != nil {
		return nil, err
	}
	e, err := parent.FindEntry(path.Base(p))
	if err != nil || e.Mode == filemode.Submodule {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return e, nil
}

// parentOf is the folder holding p in the tree ("" for its root).
func parentOf(p string) string {
	if d := path.Dir(p); d != "." {
		return d
	}
	return ""
}

// tree is folder name's tree.
func (c commitFS) tree(op, name string) (*object.Tree, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return c.treeAt(op, name, c.full(name))
}

// treeAt is the folder at path p of the tree ("" for its root), looked up
// one folder at a time, each once; name is how errors name it. A path
// that is not a folder there does not exist; a folder whose tree cannot
// be read is an *objectError.
func (c commitFS) treeAt(op, name, p string) (*object.Tree, error) {
	if p == "" {
		return c.root, nil
	}
	if t := c.cache.trees[p]; t != nil {
		return t, nil
	}
	parent, err := c.treeAt(op, name, parentOf(p))
	if err != nil {
		return nil, err
	}
	if e, err := parent.FindEntry(path.Base(p)); err != nil || e.Mode != filemode.Dir {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	t, err := parent.Tree(path.Base(p))
	if err != nil {
		return nil, &objectError{err}
	}
	c.cache.trees[p] = t
	return t, nil
}

// Open opens a file or folder. A symlink is an error, and so is a blob
// over manifest.MaxSize (both name it).
func (c commitFS) Open(name string) (fs.File, error) {
	e, err := c.entry("open", name)
	if err != nil {
		return nil, err
	}
	if e == nil || e.Mode == filemode.Dir {
		return &commitDir{fsys: c, name: name}, nil
	}
	if e.Mode == filemode.Symlink {
		return nil, fmt.Errorf("%s is a symlink; files in git must be regular files", name)
	}
	b, err := c.blob(e)
	if err != nil {
		return nil, err
	}
	if b.Size > manifest.MaxSize {
		return nil, fmt.Errorf("%s: %d bytes: %w of %d bytes", name, b.Size, manifest.ErrTooLarge, manifest.MaxSize)
	}
	return &commitFile{info: entryInfo{name: path.Base(name), mode: e.Mode, size: b.Size}, blob: b, path: c.full(name), commit: c.commit}, nil
}

// Stat describes a file or folder; a symlink is an error: links are not
// followed.
func (c commitFS) Stat(name string) (fs.FileInfo, error) {
	fi, err := c.Lstat(name)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symlink; manifests in git must be regular files", name)
	}
	return fi, err
}

// Lstat describes a file, folder or symlink.
func (c commitFS) Lstat(name string) (fs.FileInfo, error) {
	e, err := c.entry("lstat", name)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return entryInfo{name: ".", mode: filemode.Dir}, nil
	}
	return c.info(name, *e)
}

// ReadLink returns a symlink's target.
func (c commitFS) ReadLink(name string) (string, error) {
	e, err := c.entry("readlink", name)
	if err != nil {
		return "", err
	}
	if e == nil || e.Mode != filemode.Symlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	b, err := c.blob(e)
	if err != nil {
		return "", err
	}
	r, err := b.Reader()
	if err != nil {
		return "", &objectError{err}
	}
	defer r.Close()
	target, err := manifest.ReadLimited(r, manifest.MaxSize)
	if err != nil {
		return "", &objectError{err}
	}
	return string(target), nil
}

// ReadDir lists a folder, sorted by name, without its submodules.
func (c commitFS) ReadDir(name string) ([]fs.DirEntry, error) {
	t, err := c.tree("readdir", name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, 0, len(t.Entries))
	for _, e := range t.Entries {
		if e.Mode == filemode.Submodule {
			continue
		}
		out = append(out, commitEntry{fsys: c, tree: t, entry: e, name: path.Join(name, e.Name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// Sub is folder dir of the tree.
func (c commitFS) Sub(dir string) (fs.FS, error) {
	if _, err := c.tree("sub", dir); err != nil {
		return nil, err
	}
	return commitFS{root: c.root, dir: c.full(dir), commit: c.commit, cache: c.cache}, nil
}

// info describes entry e at name; a blob's size is read from its object.
func (c commitFS) info(name string, e object.TreeEntry) (fs.FileInfo, error) {
	fi := entryInfo{name: path.Base(name), mode: e.Mode}
	if e.Mode == filemode.Regular || e.Mode == filemode.Executable || e.Mode == filemode.Deprecated {
		b, err := c.blob(&e)
		if err != nil {
			return nil, err
		}
		fi.size = b.Size
	}
	return fi, nil
}

// entryInfo is a tree entry as an fs.FileInfo.
type entryInfo struct {
	name string
	mode filemode.FileMode
	size int64
}

func (i entryInfo) Name() string       { return i.name }
func (i entryInfo) Size() int64        { return i.size }
func (i entryInfo) ModTime() time.Time { return time.Time{} }
func (i entryInfo) IsDir() bool        { return i.mode == filemode.Dir }
func (i entryInfo) Sys() any           { return nil }
func (i entryInfo) Mode() fs.FileMode {
	switch i.mode {
	case filemode.Dir:
		return fs.ModeDir | 0o755
	case filemode.Symlink:
		return fs.ModeSymlink | 0o777
	case filemode.Executable:
		return 0o755
	}
	return 0o644
}

// commitEntry is an entry of a folder listed by ReadDir.
type commitEntry struct {
	fsys  commitFS
	tree  *object.Tree
	entry object.TreeEntry
	name  string
}

func (d commitEntry) Name() string               { return d.entry.Name }
func (d commitEntry) IsDir() bool                { return d.entry.Mode == filemode.Dir }
func (d commitEntry) Type() fs.FileMode          { return entryInfo{mode: d.entry.Mode}.Mode().Type() }
func (d commitEntry) Info() (fs.FileInfo, error) { return d.fsys.info(d.name, d.entry) }

// commitDir is an opened folder.
type commitDir struct {
	fsys commitFS
	name string
	read bool
}

func (d *commitDir) Stat() (fs.FileInfo, error) {
	return entryInfo{name: path.Base(d.name), mode: filemode.Dir}, nil
}
func (d *commitDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.name, Err: errors.New("is a directory")}
}
func (d *commitDir) Close() error { return nil }

// ReadDir returns the folder's entries, all at once.
func (d *commitDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if d.read {
		if n > 0 {
			return nil, io.EOF
		}
		return nil, nil
	}
	d.read = true
	return d.fsys.ReadDir(d.name)
}

// commitFile is an opened blob, read from its object on the first Read.
type commitFile struct {
	info   entryInfo
	blob   *object.Blob
	path   string
	commit string
	r      io.ReadCloser
}

func (f *commitFile) Stat() (fs.FileInfo, error) { return f.info, nil }

func (f *commitFile) Read(p []byte) (int, error) {
	if f.r == nil {
		r, err := f.blob.Reader()
		if err != nil {
			return 0, f.objectError(err)
		}
		f.r = r
	}
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF {
		err = f.objectError(err)
	}
	return n, err
}

func (f *commitFile) objectError(err error) error {
	return &objectError{fmt.Errorf("read %s at %s: %w", f.path, f.commit, err)}
}

func (f *commitFile) Close() error {
	if f.r != nil {
		return f.r.Close()
	}
	return nil
}
