package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostlet/hostlet/internal/testkit"
)

// TestRuntimeDirMustBeInMemory: the folder is made with mode 0700 on a
// tmpfs, and refused on a filesystem that writes to disk or when it is not
// a clean absolute path.
func TestRuntimeDirMustBeInMemory(t *testing.T) {
	mnt := filepath.Join(t.TempDir(), "run")
	testkit.MountTmpfs(t, mnt, 1<<20)
	dir := filepath.Join(mnt, "hostlet", "secrets")
	if err := PrepareRuntimeDir(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v %v", fi.Mode(), err)
	}
	if err := PrepareRuntimeDir(dir); err != nil {
		t.Fatalf("made before: %v", err)
	}
	// A folder others may enter is refused, and left as it is.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := PrepareRuntimeDir(dir); err == nil || !strings.Contains(err.Error(), "has mode 0755") {
		t.Errorf("a folder of mode 0755: %v", err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o755 {
		t.Errorf("its mode changed to %v", fi.Mode())
	}
	// A link to a folder, and another user's folder, are refused.
	link := filepath.Join(mnt, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := PrepareRuntimeDir(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a link: %v", err)
	}
	theirs := filepath.Join(mnt, "theirs")
	if err := os.Mkdir(theirs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := PrepareRuntimeDir(theirs); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Errorf("another user's folder: %v", err)
	}
	onDisk := filepath.Join(diskFolder(t), "secrets")
	if err := PrepareRuntimeDir(onDisk); !errors.Is(err, ErrNotInMemory) {
		t.Errorf("a folder on disk (%s): %v", onDisk, err)
	}
	for _, bad := range []string{"run/secrets", "/run/../tmp", "/run/x/"} {
		if err := PrepareRuntimeDir(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// diskFolder is a folder of t on a filesystem that is not in memory: the
// temporary folder, else one beside the package's sources (the engine
// matrix's /tmp is a tmpfs).
func diskFolder(t *testing.T) string {
	t.Helper()
	for _, base := range []string{os.TempDir(), "."} {
		var fs unix.Statfs_t
		if err := unix.Statfs(base, &fs); err != nil || fs.Type == unix.TMPFS_MAGIC || fs.Type == unix.RAMFS_MAGIC {
			continue
		}
		dir, err := os.MkdirTemp(base, "ondisk-")
		if err != nil {
			t.Fatal(err)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(abs) })
		return abs
	}
	t.Fatal("no folder on a disk here (the temporary folder and the package's folder are both in memory)")
	return ""
}
