// Package datafolder keeps the folders pods write on the host: a Compose
// project's relative binds that the project does not hold (a pod's
// dataFolder volumes). They live under the host's data folder, in the
// instance's folder, are made on first use (as Docker makes a missing bind
// source: a folder, 0755, the engine's user's), and are never removed
// implicitly: not with a recreate, a new revision, nor the pod's removal;
// `hostlet volumes rm` removes one no container uses.
package datafolder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"

	"golang.org/x/sys/unix"
)

// MaxWalk bounds the entries Folders counts per folder for its size.
const MaxWalk = 1_000_000

// ErrLink: a component of a data folder's path is a symbolic link (one a
// container made inside another data folder): the engine would follow it
// out of the data folder, so nothing is mounted.
var ErrLink = errors.New("is a symbolic link or not a folder: refused (the engine would follow it out of the data folder)")

// Store is the data folders of one instance: dataDir/instance.
type Store struct {
	root string
	// mu orders Ensure's index updates (pods are applied side by side).
	mu gosync.Mutex
}

// New returns the store of instance under dataDir (an absolute path).
func New(dataDir, instance string) *Store {
	return &Store{root: filepath.Join(dataDir, instance)}
}

// Root is the instance's folder of data folders.
func (s *Store) Root() string { return s.root }

// Ensure makes the data folder rel (a clean relative path, as validation
// checks) exist and returns its path on the host; one inside another data
// folder made before, or around one, is ErrNested (see indexFile). Every component below
// the instance's folder must be a folder, never a link: the engine
// resolves links in a bind source on the host, so a link a container
// made in one data folder (a parent of another's) would mount any host
// path. Folders are made through an os.Root, which never leaves it.
func (s *Store) Ensure(rel string) (string, error) {
	if !fs.ValidPath(rel) || rel == "." || strings.Split(rel, "/")[0] == indexFile {
		return "", fmt.Errorf("data folder %q: not a clean relative path", rel)
	}
	if err := os.MkdirAll(s.root, 0o711); err != nil {
		return "", fmt.Errorf("make the data folder of the instance %s: %w", s.root, err)
	}
	s.mu.Lock()
	err := s.record(rel)
	s.mu.Unlock()
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return "", fmt.Errorf("open the data folder of the instance %s: %w", s.root, err)
	}
	defer root.Close()
	if err := root.MkdirAll(rel, 0o755); err != nil {
		return "", fmt.Errorf("make data folder %s: %w", rel, err)
	}
	p := ""
	for _, part := range strings.Split(rel, "/") {
		p = path.Join(p, part)
		fi, err := root.Lstat(p)
		if err != nil {
			return "", fmt.Errorf("data folder %s: %w", rel, err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("data folder %s: %s %w", rel, p, ErrLink)
		}
	}
	return filepath.Join(s.root, filepath.FromSlash(rel)), nil
}

// Open opens data folder rel (made by Ensure) for reading, walking down
// from the instance's folder one component at a time, none of them
// followed if it is a link: what is opened is the folder under the
// instance's, whatever a container swaps in meanwhile (a link is
// ErrLink). For a walk that must not leave it (fsgroup.ApplyFile).
func (s *Store) Open(rel string) (*os.File, error) {
	if !fs.ValidPath(rel) || rel == "." {
		return nil, fmt.Errorf("data folder %q: not a clean relative path", rel)
	}
	// The instance's folder is the operator's (it may be a link);
	// nothing below it is followed.
	fd, err := unix.Open(s.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the data folder of the instance %s: %w", s.root, err)
	}
	for _, part := range strings.Split(rel, "/") {
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("data folder %s: %s %w", rel, part, ErrLink)
		}
		if err != nil {
			return nil, fmt.Errorf("open data folder %s: %w", rel, err)
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), filepath.Join(s.root, filepath.FromSlash(rel))), nil
}

// Folder is one data folder as listed: a project's top folder.
type Folder struct {
	// Name is "<project>/<folder>", what `hostlet volumes rm` takes.
	Name string `json:"name"`
	// Path is the folder on the host.
	Path string `json:"path"`
	// SizeBytes is the size of its regular files; Partial when more than
	// MaxWalk entries were not counted.
	SizeBytes int64 `json:"sizeBytes"`
	Partial   bool  `json:"partial,omitempty"`
}

// Folders lists the data folders on the host: each project's folders
// (the first component of the paths its binds name), sorted by name, with
// their sizes. No instance folder is none.
func (s *Store) Folders() ([]Folder, error) {
	projects, err := os.ReadDir(s.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list data folders: %w", err)
	}
	var out []Folder
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		tops, err := os.ReadDir(filepath.Join(s.root, p.Name()))
		if err != nil {
			return nil, fmt.Errorf("list data folders of %s: %w", p.Name(), err)
		}
		for _, t := range tops {
			if !t.IsDir() {
				continue
			}
			f := Folder{Name: p.Name() + "/" + t.Name(), Path: filepath.Join(s.root, p.Name(), t.Name())}
			f.SizeBytes, f.Partial = size(f.Path)
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b Folder) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// size adds up the regular files below dir, never following a link, and
// says whether it stopped at MaxWalk entries.
func size(dir string) (int64, bool) {
	var n int64
	seen := 0
	partial := false
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if seen++; seen > MaxWalk {
			partial = true
			return filepath.SkipAll
		}
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n, partial
}

// Remove removes the data folder name ("<project>/<folder>", as Folders
// lists it) with everything in it. used says whether a container mounts
// anything in it (asked with its path right before): then it is left, and
// that is the error.
func (s *Store) Remove(name string, used func(path string) []string) error {
	project, top, ok := strings.Cut(name, "/")
	if !ok || !fs.ValidPath(name) || project == "" || top == "" || strings.Contains(top, "/") || project == ".." || top == ".." {
		return fmt.Errorf("data folder %q: not a data folder's name (<project>/<folder>, as hostlet volumes lists it)", name)
	}
	p := filepath.Join(s.root, project, top)
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("data folder %q: %w", name, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data folder %q: %w", name, ErrLink)
	}
	if users := used(p); len(users) > 0 {
		return fmt.Errorf("data folder %q is used by %s; left", name, strings.Join(users, ", "))
	}
	root, err := os.OpenRoot(s.root)
	if err != nil {
		return fmt.Errorf("open the data folder of the instance %s: %w", s.root, err)
	}
	defer root.Close()
	if err := root.RemoveAll(path.Join(project, top)); err != nil {
		return fmt.Errorf("remove data folder %q: %w", name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.forget(name); err != nil {
		return fmt.Errorf("data folder %q removed; its index: %w", name, err)
	}
	return nil
}
