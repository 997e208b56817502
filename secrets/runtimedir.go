package secrets

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// DefaultRuntimeDir is secrets.runtimeDir's default: on systemd hosts
// /run is a tmpfs.
const DefaultRuntimeDir = "/run/hostlet/secrets"

// ErrNotInMemory is the error of a runtime folder on a filesystem that
// keeps its files on a disk.
var ErrNotInMemory = errors.New("not on a tmpfs or ramfs: decrypted files would reach a disk")

// PrepareRuntimeDir makes dir (and its parents) if it does not exist,
// gives it mode 0700, and refuses it unless it lies on a tmpfs or a ramfs:
// the only place a decrypted file a container mounts may be written.
func PrepareRuntimeDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("secrets.runtimeDir %q is not a clean absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
	}
	if fs.Type != unix.TMPFS_MAGIC && fs.Type != unix.RAMFS_MAGIC {
		return fmt.Errorf("secrets.runtimeDir %s: %w (mount a tmpfs there, or name a folder under /run)", dir, ErrNotInMemory)
	}
	return nil
}
