package sources

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// errOutsideRoot is the read error of a file whose resolved path leaves
// the folder it was found in.
var errOutsideRoot = errors.New("resolves outside the source root")

// folderFS is a source's folder, at dir on disk (its own symlinks
// resolved), as the fs.FS the tree reader reads (package sources/tree).
// Files and folders are opened through an os.Root of the folder, opened on
// first use, so no link leads out of it, and files without blocking (a
// FIFO named like a manifest is an error, not a hang). A manifest file's
// links are resolved first (Resolve): a link to a file in the folder,
// relative or absolute, is read, and one out of it is refused before
// anything is opened. Stat follows links as os.Stat does, except that a
// link to a folder is an error (links to folders are not followed).
// Errors of folders name them by their path on disk, as os.ReadDir's do.
type folderFS struct {
	dir  string
	root *os.Root
	err  error
}

// open opens the folder's os.Root, once.
func (f *folderFS) open() (*os.Root, error) {
	if f.root == nil && f.err == nil {
		f.root, f.err = os.OpenRoot(f.dir)
	}
	return f.root, f.err
}

// builds is the folder as the tree a build's context is read from.
func (f *folderFS) builds() (fs.FS, error) {
	if _, err := f.open(); err != nil {
		return nil, err
	}
	return f, nil
}

func (f *folderFS) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// Open opens a file or folder of the folder, without blocking.
func (f *folderFS) Open(name string) (fs.File, error) {
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	file, err := r.OpenFile(filepath.FromSlash(name), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return file, nil
}

// Resolve returns the path in the folder that file name's links lead to;
// a path out of the folder is errOutsideRoot.
func (f *folderFS) Resolve(name string) (string, error) {
	resolved, err := filepath.EvalSymlinks(filepath.Join(f.dir, filepath.FromSlash(name)))
	if err != nil {
		return "", fmt.Errorf("%s: %w", "resolve symlink", unwrapPath(err))
	}
	inner, err := filepath.Rel(f.dir, resolved)
	if err != nil || inner == ".." || strings.HasPrefix(inner, ".."+string(filepath.Separator)) || filepath.IsAbs(inner) {
		return "", fmt.Errorf("%w %s; not read", errOutsideRoot, f.dir)
	}
	return filepath.ToSlash(inner), nil
}

// Stat describes the file name leads to; a link to a folder is an error.
func (f *folderFS) Stat(name string) (fs.FileInfo, error) {
	p := filepath.Join(f.dir, filepath.FromSlash(name))
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return fi, err
	}
	if lfi, err := os.Lstat(p); err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s: symlink to a folder is not followed", p)
	}
	return fi, nil
}

// Lstat describes name itself, a link or not.
func (f *folderFS) Lstat(name string) (fs.FileInfo, error) {
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	return r.Lstat(filepath.FromSlash(name))
}

// ReadLink returns the target of link name.
func (f *folderFS) ReadLink(name string) (string, error) {
	r, err := f.open()
	if err != nil {
		return "", err
	}
	return r.Readlink(filepath.FromSlash(name))
}

// ReadDir lists folder name, sorted by name.
func (f *folderFS) ReadDir(name string) ([]fs.DirEntry, error) {
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	p := filepath.Join(f.dir, filepath.FromSlash(name))
	dir, err := r.Open(filepath.FromSlash(name))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: unwrapPath(err)}
	}
	defer dir.Close()
	des, err := dir.ReadDir(-1)
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return des, err
}

// pathFS is a folder read by path, its files' links followed wherever
// they lead: only for a source path that is one file (the host's
// configuration names it), opened without blocking.
type pathFS string

func (d pathFS) Open(name string) (fs.File, error) {
	f, err := os.OpenFile(filepath.Join(string(d), filepath.FromSlash(name)), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
