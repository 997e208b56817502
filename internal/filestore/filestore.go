// Package filestore keeps the files volumes of pods (a Compose project's
// relative bind mounts, configs and secrets) on the host, where Docker can
// bind-mount them: each under its digest in one folder, written once,
// read-only, and removed when no pod or container uses it any more.
//
// A copy appears whole or not at all: it is written under a temporary
// name, synced, and renamed to its digest; a write that fails (a full
// disk) leaves nothing behind but a temporary that the next Prune removes.
package filestore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"

	"github.com/hostlet/hostlet/manifest"
)

// tmpPrefix starts the name of a copy being written.
const tmpPrefix = ".tmp-"

// Store is the folder of materialised files.
type Store struct {
	dir string
	// mu: Materialise takes it shared, Prune alone, so Prune never
	// removes a copy being written or just written and not yet used.
	mu gosync.RWMutex
	// write writes one file; a test seam for failing writes.
	write func(f *os.File, data []byte) error
}

// New returns the store kept in dir (created on first use, mode 0700).
func New(dir string) *Store {
	return &Store{dir: dir, write: writeAll}
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

func writeAll(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// Materialise makes f's copy exist under name and returns the host path
// to bind-mount: a file for a single file, else a folder. name is 64
// lower-case hex digits standing for f's content (the caller's keyed
// hash of its digest, so that the name tells nothing about the content
// to whoever reads it): the same name is never written twice.
func (s *Store) Materialise(ctx context.Context, name string, f *manifest.Files) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if !IsName(name) {
		return "", fmt.Errorf("files %s: %q is not a copy's name (64 lower-case hex digits)", f.Source, name)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	final := filepath.Join(s.dir, name)
	if fi, err := os.Lstat(final); err == nil {
		if fi.IsDir() != !f.Single() || !(fi.Mode().IsRegular() || fi.IsDir()) {
			return "", fmt.Errorf("files %s: %s is not what hostlet wrote there: remove it", f.Source, final)
		}
		return final, nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return "", fmt.Errorf("files %s: create %s: %w", f.Source, s.dir, err)
	}
	tmp, err := s.writeTemp(name, f)
	if err != nil {
		return "", fmt.Errorf("files %s: write under %s: %w", f.Source, s.dir, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		removeAll(tmp)
		if _, statErr := os.Lstat(final); statErr == nil {
			return final, nil // written meanwhile: the same content
		}
		return "", fmt.Errorf("files %s: %w", f.Source, err)
	}
	if err := syncDir(s.dir); err != nil {
		return "", fmt.Errorf("files %s: %w", f.Source, err)
	}
	return final, nil
}

// writeTemp writes f under a temporary name in the store and returns it.
func (s *Store) writeTemp(final string, f *manifest.Files) (name string, err error) {
	suffix := make([]byte, 8)
	_, _ = rand.Read(suffix)
	name = filepath.Join(s.dir, tmpPrefix+final[:16]+"-"+hex.EncodeToString(suffix))
	defer func() {
		if err != nil {
			removeAll(name)
		}
	}()
	if f.Single() {
		return name, s.writeFile(name, f.Items[0])
	}
	if err := os.Mkdir(name, 0o700); err != nil {
		return name, err
	}
	root, err := os.OpenRoot(name)
	if err != nil {
		return name, err
	}
	defer root.Close()
	var dirs []string
	for _, it := range f.Items {
		if !fs.ValidPath(it.Path) || it.Path == "." || it.Path == "" {
			return name, fmt.Errorf("%q is not a path inside the folder", it.Path)
		}
		if d := path.Dir(it.Path); d != "." {
			if err := root.MkdirAll(d, 0o700); err != nil {
				return name, err
			}
			dirs = append(dirs, d)
			for above := range manifest.ParentDirs(d) {
				dirs = append(dirs, above)
			}
		}
		if err := s.writeIn(root, it); err != nil {
			return name, err
		}
	}
	// Read-only, deepest first: a folder made 0555 before its
	// sub-folders would still be writable by root alone.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range slices.Compact(dirs) {
		if err := root.Chmod(d, 0o555); err != nil {
			return name, err
		}
	}
	if err := os.Chmod(name, 0o555); err != nil {
		return name, err
	}
	return name, nil
}

func (s *Store) writeFile(name string, it manifest.FileItem) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return s.finish(f, it)
}

func (s *Store) writeIn(root *os.Root, it manifest.FileItem) error {
	f, err := root.OpenFile(it.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := s.finish(f, it); err != nil {
		return fmt.Errorf("%s: %w", it.Path, err)
	}
	return nil
}

// finish writes the item's content into f, makes it read-only with the
// item's mode, syncs and closes it.
func (s *Store) finish(f *os.File, it manifest.FileItem) error {
	err := s.write(f, it.Data)
	if err == nil {
		err = f.Chmod(fs.FileMode(it.ItemMode()))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// Prune removes every copy whose name is not in keep, and every
// temporary left by a write that did not finish. What it could not remove
// is in the error; the rest is removed regardless.
func (s *Store) Prune(ctx context.Context, keep map[string]bool) (removed []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", s.dir, err)
	}
	var errs []error
	for _, e := range entries {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		name := e.Name()
		if keep[name] || !(IsName(name) || strings.HasPrefix(name, tmpPrefix)) {
			continue
		}
		if err := removeAll(filepath.Join(s.dir, name)); err != nil {
			errs = append(errs, err)
			continue
		}
		if IsName(name) {
			removed = append(removed, name)
		}
	}
	return removed, errors.Join(errs...)
}

// Names lists the copies in the store.
func (s *Store) Names() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []string
	for _, e := range entries {
		if IsName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, err
}

// IsName reports whether name is a copy's name: 64 lower-case hex
// digits.
func IsName(name string) bool {
	if len(name) != 64 {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// removeAll removes a copy, its read-only folders made writable first
// (without root, a 0555 folder's files cannot be removed).
func removeAll(p string) error {
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(q, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}
