package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultRuntimeDir is secrets.runtimeDir's default: on systemd hosts
// /run is a tmpfs.
const DefaultRuntimeDir = "/run/hostlet/secrets"

// ErrNotInMemory is the error of a runtime folder on a filesystem that
// keeps its files on a disk.
var ErrNotInMemory = errors.New("not on a tmpfs or ramfs: decrypted files would reach a disk")

// PrepareRuntimeDir makes dir (and its parents) with mode 0700 if it does
// not exist, and refuses it unless it lies on a tmpfs or a ramfs (the
// only place a decrypted file a container mounts may be written), is a
// folder (not a link to one), is owned by the user hostlet runs as, and
// no one else may enter it. A folder made before is never changed: a
// shared one (/run, /dev/shm) is refused, not closed to its other users.
func PrepareRuntimeDir(dir string) error {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return fmt.Errorf("secrets.runtimeDir %q is not a clean absolute path", dir)
	}
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil { // the umask's bits off
			return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
	}
	if err := checkRuntimeDir(fi); err != nil {
		return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("secrets.runtimeDir %s: %w", dir, err)
	}
	if st.Type != unix.TMPFS_MAGIC && st.Type != unix.RAMFS_MAGIC {
		return fmt.Errorf("secrets.runtimeDir %s: %w (mount a tmpfs there, or name a folder under /run)", dir, ErrNotInMemory)
	}
	return nil
}

// checkRuntimeDir refuses a runtime folder that is a link, not a folder,
// another user's, or open to others.
func checkRuntimeDir(fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("is a symbolic link: name the folder itself")
	case !fi.IsDir():
		return errors.New("is not a folder")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("is owned by uid %d, hostlet runs as uid %d: name a folder of hostlet's own", st.Uid, os.Geteuid())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("has mode %04o: other users could read the decrypted files (chmod 700, or name a folder of hostlet's own)", perm)
	}
	return nil
}
