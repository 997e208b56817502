package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkPacks checks that each pack of the git cache dir ends with the
// checksum its index records for it (the index's trailer: the pack's
// SHA-1, then its own). A pack cut short (a full disk, a kill during a
// fetch) reads well up to where it was cut, so reading a commit may not
// notice; its trailer does. Two small reads per pack.
func checkPacks(dir string) error {
	packDir := filepath.Join(dir, "objects", "pack")
	entries, err := os.ReadDir(packDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the cache's packs: %w", err)
	}
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".idx")
		if !ok {
			continue
		}
		idxTrailer, err := tail(filepath.Join(packDir, e.Name()), 40)
		if err != nil {
			return err
		}
		packTrailer, err := tail(filepath.Join(packDir, name+".pack"), 20)
		if err != nil {
			return err
		}
		if !bytes.Equal(idxTrailer[:20], packTrailer) {
			return fmt.Errorf("pack %s.pack does not end with the checksum its index records (cut short?)", name)
		}
	}
	return nil
}

// tail reads the last n bytes of the file at path.
func tail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the cache's pack: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read the cache's pack: %w", err)
	}
	if fi.Size() < n {
		return nil, fmt.Errorf("pack file %s is %d bytes: cut short", filepath.Base(path), fi.Size())
	}
	b := make([]byte, n)
	if _, err := f.ReadAt(b, fi.Size()-n); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the cache's pack: %w", err)
	}
	return b, nil
}
