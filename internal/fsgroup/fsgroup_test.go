package fsgroup_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostlet/hostlet/internal/fsgroup"
	"github.com/hostlet/hostlet/sync/datafolder"
)

const gid = 2000

// needRoot skips a test that changes files' groups to any group.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changing a file's group to any group needs root")
	}
}

// owner is a path's group and permission bits, never following a link.
func owner(t *testing.T, p string) (int, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Gid), fi.Mode() & (os.ModePerm | os.ModeSetgid | os.ModeSetuid | os.ModeSticky)
}

// mkfile writes a file of mode under dir.
func mkfile(t *testing.T, dir, rel string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApplyGivesTheVolumeToTheGroup: files and folders get the group and
// the kubelet's bits (group read/write for a writable volume, read for a
// read-only one; folders group search and setgid), a file's other bits
// kept.
func TestApplyGivesTheVolumeToTheGroup(t *testing.T) {
	needRoot(t)
	tests := []struct {
		name     string
		readOnly bool
		file     os.FileMode // a file made 0600
		dir      os.FileMode // a folder made 0700
		secret   os.FileMode // a file made 0400
	}{
		{name: "writable", file: 0o660, dir: 0o770 | os.ModeSetgid, secret: 0o660},
		{name: "read-only", readOnly: true, file: 0o640, dir: 0o750 | os.ModeSetgid, secret: 0o440},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vol := t.TempDir()
			f := mkfile(t, vol, "sub/data.db", 0o600)
			s := mkfile(t, vol, "token", 0o400)
			if err := os.Chmod(filepath.Join(vol, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			res, err := fsgroup.Apply(context.Background(), vol, fsgroup.Options{GID: gid, ReadOnly: tt.readOnly})
			if err != nil {
				t.Fatal(err)
			}
			if res.Entries != 4 {
				t.Errorf("walked %d entries, want 4 (root, sub, sub/data.db, token)", res.Entries)
			}
			for p, want := range map[string]os.FileMode{f: tt.file, filepath.Join(vol, "sub"): tt.dir, s: tt.secret} {
				if g, mode := owner(t, p); g != gid || mode != want {
					t.Errorf("%s: group %d mode %v, want %d %v", p, g, mode, gid, want)
				}
			}
			if g, mode := owner(t, vol); g != gid || mode&os.ModeSetgid == 0 {
				t.Errorf("root: group %d mode %v, want %d and setgid", g, mode, gid)
			}
		})
	}
}

// TestApplyNeverFollowsALinkOutOfTheVolume: a container plants links in
// its volume to files and folders of the host (/etc/shadow): neither the
// targets nor what is under a linked folder change, nor does the walk
// leave the volume; a volume's root that is a link is refused.
func TestApplyNeverFollowsALinkOutOfTheVolume(t *testing.T) {
	needRoot(t)
	outside := t.TempDir()
	shadow := mkfile(t, outside, "shadow", 0o600)
	inner := mkfile(t, outside, "etc/passwd", 0o644)
	vol := t.TempDir()
	for name, target := range map[string]string{"shadow": shadow, "etc": filepath.Join(outside, "etc"), "up": "../../..", "loop": "."} {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	mkfile(t, vol, "own", 0o600)
	if _, err := fsgroup.Apply(context.Background(), vol, fsgroup.Options{GID: gid}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{shadow, inner, filepath.Join(outside, "etc"), outside} {
		if g, _ := owner(t, p); g == gid {
			t.Errorf("%s outside the volume got group %d", p, gid)
		}
	}
	if g, mode := owner(t, shadow); g != 0 || mode != 0o600 {
		t.Errorf("shadow: group %d mode %v, want 0 and 0600", g, mode)
	}
	if g, _ := owner(t, filepath.Join(vol, "own")); g != gid {
		t.Errorf("own file: group %d, want %d", g, gid)
	}
	link := filepath.Join(t.TempDir(), "vol")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	_, err := fsgroup.Apply(context.Background(), link, fsgroup.Options{GID: gid})
	if err == nil {
		t.Fatal("a root that is a link was walked")
	}
	if g, _ := owner(t, outside); g == gid {
		t.Errorf("the link's target got group %d", gid)
	}
}

// TestApplyIsBounded: a volume with more entries than the walk may count
// stops with ErrTooMany, its root unchanged (so OnRootMismatch walks it
// again); a context that ends stops the walk too.
func TestApplyIsBounded(t *testing.T) {
	needRoot(t)
	vol := t.TempDir()
	for i := range 50 {
		mkfile(t, vol, fmt.Sprintf("f%02d", i), 0o600)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		max  int
		want error
	}{
		{name: "more entries than the bound", ctx: context.Background(), max: 10, want: fsgroup.ErrTooMany},
		{name: "the context ended", ctx: ctx, max: 0, want: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := fsgroup.Apply(tt.ctx, vol, fsgroup.Options{GID: gid, MaxEntries: tt.max, Policy: fsgroup.OnRootMismatch})
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if tt.max > 0 && res.Entries > tt.max+1 {
				t.Errorf("walked %d entries past the bound %d", res.Entries, tt.max)
			}
			if g, _ := owner(t, vol); g == gid {
				t.Errorf("root changed by a walk cut short")
			}
		})
	}
}

// TestApplyOnRootMismatch: a root already as wanted is not walked (a file
// under it keeps its group); Always walks it regardless.
func TestApplyOnRootMismatch(t *testing.T) {
	needRoot(t)
	vol := t.TempDir()
	f := mkfile(t, vol, "f", 0o600)
	if _, err := fsgroup.Apply(context.Background(), vol, fsgroup.Options{GID: gid}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(f, -1, 0); err != nil {
		t.Fatal(err)
	}
	res, err := fsgroup.Apply(context.Background(), vol, fsgroup.Options{GID: gid, Policy: fsgroup.OnRootMismatch})
	if err != nil || !res.Skipped {
		t.Fatalf("OnRootMismatch on a matching root: %+v, %v; want skipped", res, err)
	}
	if g, _ := owner(t, f); g != 0 {
		t.Errorf("file changed by a skipped walk")
	}
	if _, err := fsgroup.Apply(context.Background(), vol, fsgroup.Options{GID: gid, Policy: fsgroup.Always}); err != nil {
		t.Fatal(err)
	}
	if g, _ := owner(t, f); g != gid {
		t.Errorf("Always left the file's group %d", g)
	}
}

// TestApplyNeverOpensAFIFO: a FIFO a container made in its volume gets the
// group without being opened (opening it for reading would block the
// sync); a single file is a root too.
func TestApplyNeverOpensAFIFO(t *testing.T) {
	needRoot(t)
	vol := t.TempDir()
	fifo := filepath.Join(vol, "pipe")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := fsgroup.Apply(context.Background(), vol, fsgroup.Options{GID: gid})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the walk blocked on a FIFO")
	}
	if g, _ := owner(t, fifo); g != gid {
		t.Errorf("fifo: group %d, want %d", g, gid)
	}
	single := mkfile(t, t.TempDir(), "secret", 0o400)
	if _, err := fsgroup.Apply(context.Background(), single, fsgroup.Options{GID: gid, ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	if g, mode := owner(t, single); g != gid || mode != 0o440 {
		t.Errorf("single file: group %d mode %v, want %d 0440", g, mode, gid)
	}
}

// A data folder is walked from the descriptor its store opened, one
// component at a time without following links: a container of the pod's
// running version that swaps a folder of the path for a link to a host
// folder, over and over, never gets the host folder walked (it gets a
// refusal, or the walk of the real folder).
func TestADataFolderSwappedForALinkIsNeverWalkedThrough(t *testing.T) {
	needRoot(t)
	host := t.TempDir() // stands for the host's /
	shadow := mkfile(t, host, "etc/shadow", 0o640)
	store := datafolder.New(t.TempDir(), "inst")
	a, err := store.Ensure("proj/a") // the running version's data folder
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(a, "b", "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(host, filepath.Join(a, "bl")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // the container, root inside, in its own data folder
		defer close(done)
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(a, "b"), unix.AT_FDCWD, filepath.Join(a, "bl"), unix.RENAME_EXCHANGE)
		}
	}()
	t.Cleanup(func() { stop.Store(true); <-done })
	for range 2000 {
		if _, err := store.Ensure("proj/a/b/etc"); err != nil {
			continue
		}
		f, err := store.Open("proj/a/b/etc")
		if err != nil {
			continue // a link on the way: refused
		}
		fsgroup.ApplyFile(context.Background(), f, fsgroup.Options{GID: 2000})
		f.Close()
		if g, _ := owner(t, shadow); g == 2000 {
			t.Fatal("a host file outside every data folder was given to the fsGroup")
		}
	}
}
