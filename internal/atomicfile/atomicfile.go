// Package atomicfile writes files so that a reader, or hostlet after a
// crash, sees either the old content or the new, never a mix: write a temp
// file in the same folder, fsync it, rename it over the target, fsync the
// folder. Every step's error, the folder's fsync included, is the caller's
// to see. It also sets damaged state files aside for inspection
// (Quarantine, Damaged) and keeps the list of state files that could not
// be read or written (Problems), for /status and /metrics.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile atomically replaces path with data, creating parent folders
// (and fsyncing the folders that hold the new ones). The data is durable
// once it returns nil.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	created, err := mkdirAll(dir)
	if err != nil {
		return fmt.Errorf("create folder for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A folder made just now is durable once its parent is synced.
	for _, d := range created {
		if err := SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}

// SyncDir fsyncs the folder dir, making the renames and removals in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open folder %s for fsync: %w", dir, err)
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("fsync folder %s: %w", dir, serr)
	}
	if cerr != nil {
		return fmt.Errorf("close folder %s: %w", dir, cerr)
	}
	return nil
}

// mkdirAll creates dir and its missing parents (mode 0700) and returns the
// folders it created, deepest last.
func mkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append([]string{d}, missing...)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return missing, nil
}
