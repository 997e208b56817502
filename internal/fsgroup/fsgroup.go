// Package fsgroup gives a pod's volume on the host to the pod's fsGroup,
// as the kubelet does (pkg/volume/volume_linux.go): every file and
// folder under it group-owned by the group, with group read (and write,
// for a writable volume) added to its mode, folders with group search and
// the setgid bit, so that what is made in them later inherits the group.
//
// A volume is written by containers: whatever is in it may be planted.
// The walk never follows a symbolic link (links themselves are left as
// they are) and never leaves the volume: each entry is opened relative to
// its folder's descriptor with O_NOFOLLOW (O_PATH for what is not a
// folder, so a device or a FIFO is never opened), and changed through
// that descriptor, so an entry swapped for a link between the listing
// and the change is refused, not followed. The walk is bounded: it
// counts entries (Options.MaxEntries), goes at most MaxDepth folders
// deep, and stops when its context ends. The volume's root is changed
// last, so an OnRootMismatch check only passes after a complete walk.
//
// Cost: one descriptor per folder level open at once, a handful of
// system calls per entry.
package fsgroup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Change policies, as Kubernetes names them.
const (
	Always         = "Always"
	OnRootMismatch = "OnRootMismatch"
)

// DefaultMaxEntries bounds a walk when Options.MaxEntries is 0.
const DefaultMaxEntries = 1_000_000

// MaxDepth bounds how deep folders are walked.
const MaxDepth = 256

// ErrTooMany: the volume holds more entries than the walk may count.
var ErrTooMany = errors.New("too many files and folders to change")

// ErrNotLocal: the path is not a folder or a file (a link, or gone).
var ErrNotLocal = errors.New("is a symbolic link or not a file or folder: refused")

// Options say what a walk changes.
type Options struct {
	// GID is the group that owns everything once the walk is through.
	GID int
	// Policy is Always or OnRootMismatch (""is Always).
	Policy string
	// ReadOnly: group read only (the kubelet's 0440 mask) instead of
	// read and write (0660), for a volume mounted read-only only.
	ReadOnly bool
	// MaxEntries bounds the entries walked (0: DefaultMaxEntries).
	MaxEntries int
}

// Result tells what a walk did.
type Result struct {
	// Entries are the entries walked, the root included.
	Entries int
	// Skipped: the policy is OnRootMismatch and the root was as wanted,
	// so nothing was walked.
	Skipped bool
}

// walk is one walk's state.
type walk struct {
	ctx     context.Context
	o       Options
	mask    uint32
	entries int
}

// Apply changes the group and mode of path (a folder, or a single file)
// and, for a folder, of everything under it, per o. path itself must not
// be a symbolic link.
func Apply(ctx context.Context, path string, o Options) (Result, error) {
	w := newWalk(ctx, o)
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Result{}, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	return w.apply(fd, path)
}

// ApplyFile is Apply on f, a folder or file opened already (by a walk
// that did not follow links to it: see datafolder.Store.Open), never
// looked up again by its name. f stays open.
func ApplyFile(ctx context.Context, f *os.File, o Options) (Result, error) {
	return newWalk(ctx, o).apply(int(f.Fd()), f.Name())
}

// newWalk is a walk per o, its defaults filled in.
func newWalk(ctx context.Context, o Options) *walk {
	w := &walk{ctx: ctx, o: o, mask: 0o660}
	if o.ReadOnly {
		w.mask = 0o440
	}
	if w.o.MaxEntries <= 0 {
		w.o.MaxEntries = DefaultMaxEntries
	}
	return w
}

// apply walks the folder or file fd (at path), its root changed last.
func (w *walk) apply(fd int, path string) (Result, error) {
	o := w.o
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Result{}, fmt.Errorf("stat %s: %w", path, err)
	}
	typ := st.Mode & unix.S_IFMT
	if typ != unix.S_IFDIR && typ != unix.S_IFREG {
		return Result{}, fmt.Errorf("%s %w", path, ErrNotLocal)
	}
	if o.Policy == OnRootMismatch && w.matches(&st) {
		return Result{Skipped: true}, nil
	}
	w.entries = 1
	if typ == unix.S_IFDIR {
		// Through the descriptor: the folder stat'ed, not whatever its
		// name holds now.
		dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return Result{}, fmt.Errorf("open %s: %w", path, err)
		}
		err = w.folder(dfd, path, 1)
		unix.Close(dfd)
		if err != nil {
			return Result{Entries: w.entries}, err
		}
	}
	// The root last: OnRootMismatch finds it changed only once all is.
	if err := w.change(fd, &st, path); err != nil {
		return Result{Entries: w.entries}, err
	}
	return Result{Entries: w.entries}, nil
}

// matches reports whether st is already as the walk leaves it: the
// group, the mask's bits, and for a folder the setgid bit.
func (w *walk) matches(st *unix.Stat_t) bool {
	if int(st.Gid) != w.o.GID || st.Mode&w.mask != w.mask {
		return false
	}
	return st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&unix.S_ISGID != 0
}

// wanted is the mode st gets: the mask's bits added, for a folder group
// search and setgid too (the kubelet's rules).
func (w *walk) wanted(st *unix.Stat_t) uint32 {
	mode := st.Mode&0o7777 | w.mask
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		mode |= unix.S_ISGID | 0o110
	}
	return mode
}

// change sets the group and mode of the entry fd (O_PATH or open) with
// stat st; what names it in errors.
func (w *walk) change(fd int, st *unix.Stat_t, what string) error {
	if int(st.Gid) != w.o.GID {
		if err := unix.Fchownat(fd, "", -1, w.o.GID, unix.AT_EMPTY_PATH); err != nil {
			return fmt.Errorf("change the group of %s to %d: %w", what, w.o.GID, err)
		}
	}
	mode := w.wanted(st)
	if mode == st.Mode&0o7777 {
		return nil
	}
	// The descriptor's own file, not a path looked up again: chmod has
	// no *at form that takes an O_PATH descriptor on every kernel.
	if err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode); err != nil {
		return fmt.Errorf("change the mode of %s to %#o: %w", what, mode, err)
	}
	return nil
}

// folder changes everything in the folder open as dfd (at name, depth
// folders deep).
func (w *walk) folder(dfd int, name string, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%s: more than %d folders deep: stopped", name, MaxDepth)
	}
	// Read through a duplicate: the os.File closes its own descriptor.
	dup, err := unix.Dup(dfd)
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	d := os.NewFile(uintptr(dup), name)
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, n := range names {
			if err := w.entry(dfd, name, n, depth); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", name, err)
		}
	}
}

// entry changes entry n of the folder dfd (at parent).
func (w *walk) entry(dfd int, parent, n string, depth int) error {
	w.entries++
	if w.entries > w.o.MaxEntries {
		return fmt.Errorf("more than %d: %w", w.o.MaxEntries, ErrTooMany)
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("stopped after %d entries: %w", w.entries, err)
	}
	what := parent + "/" + n
	fd, err := unix.Openat(dfd, n, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // removed meanwhile by a container
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", what, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", what, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return nil // never followed, left as it is
	case unix.S_IFDIR:
		// Opened through the O_PATH descriptor: the folder stat'ed, not
		// whatever the name holds now.
		sub, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", what, err)
		}
		defer unix.Close(sub)
		if err := w.change(sub, &st, what); err != nil {
			return err
		}
		return w.folder(sub, what, depth+1)
	}
	return w.change(fd, &st, what)
}
