package exepages

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCleanReadOnlyMappingsAreTheExecutablesUnwrittenOnes(t *testing.T) {
	smaps, err := os.ReadFile("testdata/smaps")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []mapping
	}{
		// code and read-only data; not the data segment, not the
		// read-only segment holding a private copy, not another file's.
		{"/usr/bin/hostlet", []mapping{{0x400000, 0xff3000}, {0xff3000, 0x1d1e000}}},
		{"/opt/my tools/hostlet", []mapping{{0x7f0000200000, 0x7f0000300000}}},
		// a private page swapped out is a private page.
		{"/usr/bin/swapped", []mapping{{0x7f0000402000, 0x7f0000500000}}},
		{"/usr/bin/other", nil},
		{"", nil},
	} {
		if got := cleanReadOnlyMappings(smaps, tc.path); !slices.Equal(got, tc.want) {
			t.Errorf("mappings of %q: %x, want %x", tc.path, got, tc.want)
		}
	}
}

func TestRemoteFilesystemsAreNetworkAndFUSEOnes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fsType int64
		remote bool
	}{
		{"nfs", unix.NFS_SUPER_MAGIC, true},
		{"cifs", unix.CIFS_SUPER_MAGIC, true},
		{"smb2", unix.SMB2_SUPER_MAGIC, true},
		{"fuse", unix.FUSE_SUPER_MAGIC, true},
		{"9p", unix.V9FS_MAGIC, true},
		{"ceph", unix.CEPH_SUPER_MAGIC, true},
		{"ext4", unix.EXT4_SUPER_MAGIC, false},
		{"xfs", unix.XFS_SUPER_MAGIC, false},
		{"btrfs", unix.BTRFS_SUPER_MAGIC, false},
		{"overlay", unix.OVERLAYFS_SUPER_MAGIC, false},
		{"tmpfs", unix.TMPFS_MAGIC, false},
	} {
		if got := remoteFilesystem(tc.fsType); got != tc.remote {
			t.Errorf("%s: remote %v, want %v", tc.name, got, tc.remote)
		}
	}
}

// buildReleaser builds testdata/releaser with CGO_ENABLED=0 and the
// extra go build flags.
func buildReleaser(t *testing.T, flags ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "releaser")
	build := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, "./testdata/releaser")...)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the releaser: %v\n%s", err, out)
	}
	return bin
}

// TestReleaseKeepsAStaticBinaryRunningWithFewerPagesMapped builds a
// static binary that releases its own pages and goes on running.
func TestReleaseKeepsAStaticBinaryRunningWithFewerPagesMapped(t *testing.T) {
	bin := buildReleaser(t)
	if err := staticallyLinked(bin); err != nil {
		t.Fatalf("a CGO_ENABLED=0 build: %v", err)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil {
		t.Fatalf("releaser: %v\n%s", err, out)
	}
	var before, after, advised, cachedBefore, cachedAfter int
	var ran string
	if _, err := fmt.Sscan(string(out), &before, &after, &advised, &cachedBefore, &cachedAfter, &ran); err != nil || ran != "okok" {
		t.Fatalf("releaser printed %q (%v)", out, err)
	}
	if advised == 0 || after >= before {
		t.Errorf("advised %d bytes; file-backed resident set %d kB after, %d kB before", advised, after, before)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(bin, &fs); err != nil {
		t.Fatal(err)
	}
	switch {
	case fs.Type == unix.TMPFS_MAGIC:
		// tmpfs pages are the file itself: the page cache keeps them.
		t.Logf("the releaser is on tmpfs (TMPDIR): its %d pages stay in memory", cachedAfter)
	case cachedAfter >= cachedBefore:
		t.Errorf("pages of the executable in the page cache: %d after, %d before; want the unmapped ones dropped", cachedAfter, cachedBefore)
	}
}

// TestReleaseLeavesADynamicallyLinkedBinaryAlone builds the releaser as a
// position-independent executable (an interpreter, a dynamic section and
// RELRO): Release refuses it and advises nothing.
func TestReleaseLeavesADynamicallyLinkedBinaryAlone(t *testing.T) {
	bin := buildReleaser(t, "-buildmode=pie")
	out, err := exec.Command(bin).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "dynamically linked") {
		t.Errorf("a PIE releaser: %v, printed %q; want it refused as dynamically linked", err, out)
	}
}

func FuzzCleanReadOnlyMappings(f *testing.F) {
	smaps, err := os.ReadFile("testdata/smaps")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(smaps, "/usr/bin/hostlet")
	f.Add([]byte("1-2 r-xp 0 0 0 x\nAnonymous: 0 kB\n"), "x")
	f.Fuzz(func(t *testing.T, smaps []byte, path string) {
		for _, m := range cleanReadOnlyMappings(smaps, path) {
			if m.end <= m.start {
				t.Fatalf("mapping %x-%x is empty or reversed", m.start, m.end)
			}
		}
	})
}
