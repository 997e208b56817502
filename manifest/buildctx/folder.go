package buildctx

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Entry is one entry of a folder of the source.
type Entry struct {
	// Name is the entry's name in its folder (no slash).
	Name string
	Dir  bool
	// Exec: a file executable in its source (an x bit, git's 100755).
	Exec bool
	// Link: a symbolic link (never followed in a context).
	Link bool
}

// Folder is a folder of a source at its revision, read through the
// source's own guarded reader. Names are slash-separated and relative to
// the folder ("" or "." is the folder itself).
type Folder interface {
	// ReadDir lists a folder's entries; a name that is not a folder wraps
	// fs.ErrNotExist.
	ReadDir(name string) ([]Entry, error)
	// ReadFile reads a regular file; a missing one wraps fs.ErrNotExist.
	ReadFile(name string) ([]byte, error)
}

// ListFolder is a Folder over a list of file names (a Compose project's
// bundle): folders are the names' parents.
type ListFolder struct {
	names []string
	read  func(name string) ([]byte, error)
	exec  func(name string) bool
}

// NewListFolder is the folder prefix (slash-separated, "" for the whole
// list) of the files names, read with read; exec says which are
// executable.
func NewListFolder(names []string, prefix string, read func(name string) ([]byte, error), exec func(name string) bool) *ListFolder {
	prefix = strings.Trim(path.Clean("/"+prefix), "/")
	var in []string
	for _, n := range names {
		switch {
		case prefix == "":
			in = append(in, n)
		case strings.HasPrefix(n, prefix+"/"):
			in = append(in, strings.TrimPrefix(n, prefix+"/"))
		}
	}
	slices.Sort(in)
	full := func(n string) string {
		if prefix == "" {
			return n
		}
		return prefix + "/" + n
	}
	return &ListFolder{
		names: in,
		read:  func(n string) ([]byte, error) { return read(full(n)) },
		exec:  func(n string) bool { return exec != nil && exec(full(n)) },
	}
}

// ReadDir lists the files and folders right below name.
func (l *ListFolder) ReadDir(name string) ([]Entry, error) {
	name = strings.Trim(path.Clean("/"+name), "/")
	pre := ""
	if name != "" {
		pre = name + "/"
	}
	var out []Entry
	seen := map[string]bool{}
	for _, n := range l.names {
		if !strings.HasPrefix(n, pre) {
			continue
		}
		rest := n[len(pre):]
		first, _, isDir := strings.Cut(rest, "/")
		if seen[first] {
			continue
		}
		seen[first] = true
		out = append(out, Entry{Name: first, Dir: isDir, Exec: !isDir && l.exec(n)})
	}
	if len(out) == 0 && name != "" {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return out, nil
}

// ReadFile reads a file of the list.
func (l *ListFolder) ReadFile(name string) ([]byte, error) {
	name = strings.Trim(path.Clean("/"+name), "/")
	if _, ok := slices.BinarySearch(l.names, name); !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return l.read(name)
}
