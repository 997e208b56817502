package gitsource

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"time"

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
}

func newCommitFS(root *object.Tree, commit string) commitFS {
	return commitFS{root: root, commit: commit}
}

// full is name's path in the commit's tree ("" for its root).
func (c commitFS) full(name string) string {
	if name == "." {
		return c.dir
	}
	return path.Join(c.dir, name)
}

// entry finds name: nil for the root folder.
func (c commitFS) entry(op, name string) (*object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	p := c.full(name)
	if p == "" {
		return nil, nil
	}
	e, err := c.root.FindEntry(p)
	if err != nil {
		if notFound(err) {
			return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		return nil, &objectError{err}
	}
	if e.Mode == filemode.Submodule {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return e, nil
}

func notFound(err error) bool {
	return errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrFileNotFound)
}

// tree is folder name's tree.
func (c commitFS) tree(op, name string) (*object.Tree, error) {
	e, err := c.entry(op, name)
	switch {
	case err != nil:
		return nil, err
	case e == nil:
		if c.dir == "" {
			return c.root, nil
		}
	case e.Mode != filemode.Dir:
		return nil, &fs.PathError{Op: op, Path: name, Err: errors.New("not a directory")}
	}
	t, err := c.root.Tree(c.full(name))
	if err != nil {
		return nil, &objectError{err}
	}
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
	f, err := c.root.File(c.full(name))
	if err != nil {
		return nil, &objectError{err}
	}
	if f.Size > manifest.MaxSize {
		return nil, fmt.Errorf("%s: %d bytes: %w of %d bytes", name, f.Size, manifest.ErrTooLarge, manifest.MaxSize)
	}
	return &commitFile{info: entryInfo{name: path.Base(name), mode: e.Mode, size: f.Size}, blob: &f.Blob, path: c.full(name), commit: c.commit}, nil
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
	f, err := c.root.File(c.full(name))
	if err != nil {
		return "", &objectError{err}
	}
	target, err := f.Contents()
	if err != nil {
		return "", &objectError{err}
	}
	return target, nil
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
	return commitFS{root: c.root, dir: c.full(dir), commit: c.commit}, nil
}

// info describes entry e at name; a blob's size is read from its object.
func (c commitFS) info(name string, e object.TreeEntry) (fs.FileInfo, error) {
	fi := entryInfo{name: path.Base(name), mode: e.Mode}
	if e.Mode == filemode.Regular || e.Mode == filemode.Executable || e.Mode == filemode.Deprecated {
		f, err := c.root.File(c.full(name))
		if err != nil {
			return nil, &objectError{err}
		}
		fi.size = f.Size
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
