package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
)

// TestWriteFileFullDisk: on a full filesystem WriteFile fails, says so,
// leaves the old content and no temp file.
func TestWriteFileFullDisk(t *testing.T) {
	dir := t.TempDir()
	testkit.MountTmpfs(t, dir, 64<<10)
	p := filepath.Join(dir, "state.json")
	if err := WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(p, make([]byte, 128<<10), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write 128 KiB on a 64 KiB tmpfs: %v, want ENOSPC", err)
	}
	if !strings.Contains(err.Error(), p) {
		t.Errorf("error %q does not name the file", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Errorf("content after the failed write %q, want the old one", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries after the failed write, want 1 (no temp file)", len(entries))
	}
}

// TestWriteFileNewFolders: folders WriteFile makes are there and the file
// in them.
func TestWriteFileNewFolders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a", "b", "state.json")
	if err := WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(p)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("new folder: %v, %v; want mode 0700", fi, err)
	}
}

// TestSyncDirError: a folder that cannot be synced is an error naming it
// (WriteFile returns it; it used to be ignored).
func TestSyncDirError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	if err := SyncDir(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("SyncDir of a missing folder: %v, want an error naming it", err)
	}
}

// TestQuarantine: a damaged file (or a folder in its place) is moved
// beside itself with a time stamp; at most MaxDamaged copies are kept, the
// newest.
func TestQuarantine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "restarts.json")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var kept []string
	for i := range MaxDamaged + 2 {
		if i == 1 {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(p, []byte(fmt.Sprint("damaged ", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		// Two in the same millisecond do not collide.
		at := t0.Add(time.Duration(i/2) * time.Second)
		k, err := Quarantine(p, at)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, filepath.Base(k))
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the damaged file is still in place: %v", err)
	}
	if kept[0] != "restarts.json.corrupt-20260102T030405.000Z" || kept[1] != "restarts.json.corrupt-20260102T030405.000Z-1" {
		t.Errorf("copies named %q", kept)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := kept[len(kept)-MaxDamaged:]
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("folder holds %q, want the newest %d copies %q", names, MaxDamaged, want)
	}
	if b, err := os.ReadFile(filepath.Join(dir, kept[len(kept)-1])); err != nil || string(b) != fmt.Sprint("damaged ", len(kept)-1) {
		t.Errorf("newest copy holds %q, %v", b, err)
	}
}

// TestQuarantineManyInOneMillisecond: copies set aside faster than the
// clock's millisecond are numbered after every copy of that stamp still
// kept (a name freed by the trimming is not used again), numbers sort as
// numbers (-10 after -9), and the copies kept are the newest.
func TestQuarantineManyInOneMillisecond(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "env-hash.key")
	at := time.Date(2026, 12, 6, 1, 20, 0, 0, time.UTC)
	const n = 12
	for i := range n {
		if err := os.WriteFile(p, []byte(fmt.Sprint("damaged ", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Quarantine(p, at); err != nil {
			t.Fatal(err)
		}
	}
	copies, err := damagedCopies(dir, "env-hash.key")
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != MaxDamaged {
		t.Fatalf("kept %d copies, want %d: %+v", len(copies), MaxDamaged, copies)
	}
	for i, c := range copies {
		want := fmt.Sprint("damaged ", n-MaxDamaged+i)
		if b, err := os.ReadFile(filepath.Join(dir, c.name)); err != nil || string(b) != want {
			t.Errorf("copy %s holds %q, %v; want %q", c.name, b, err, want)
		}
	}
}

// TestDamaged: the Problem names the file and its copy relative to
// stateDir, with a bounded error; a file that cannot be moved aside says
// why.
func TestDamaged(t *testing.T) {
	state := t.TempDir()
	p := filepath.Join(state, "sources", "push.json")
	if err := WriteFile(p, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pr := Damaged(state, p, errors.New(strings.Repeat("x", 10000)), now)
	if pr.File != "sources/push.json" || pr.Op != OpRead || pr.KeptAs != "sources/push.json.corrupt-20260102T030405.000Z" || len(pr.Error) > 600 || !pr.Since.Equal(now) {
		t.Errorf("problem %+v", pr)
	}
	gone := Damaged(state, filepath.Join(state, "missing.json"), errors.New("bad"), now)
	if gone.KeptAs != "" || !strings.Contains(gone.Error, "move damaged") {
		t.Errorf("problem of a file that could not be moved: %+v", gone)
	}
}

// TestProblems: reports count every failure, news only once per text; a
// write resolves a file's write problem, not its read problem (the damaged
// copy is still there to see); a nil list records nothing.
func TestProblems(t *testing.T) {
	var ps Problems
	t0 := time.Unix(100, 0).UTC()
	steps := []struct {
		name    string
		p       Problem
		resolve string
		news    bool
	}{
		{name: "first read problem", p: Problem{File: "restarts.json", Op: OpRead, Error: "truncated", Since: t0}, news: true},
		{name: "a write fails", p: Problem{File: "sources/a.json", Op: OpWrite, Error: "no space", Since: t0}, news: true},
		{name: "it fails again", p: Problem{File: "sources/a.json", Op: OpWrite, Error: "no space", Since: t0.Add(time.Second)}},
		{name: "another text", p: Problem{File: "sources/a.json", Op: OpWrite, Error: "input/output error", Since: t0.Add(2 * time.Second)}, news: true},
		{name: "written at last", resolve: "sources/a.json"},
		{name: "restarts.json written", resolve: "restarts.json"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.resolve != "" {
				if got, want := ps.Resolve(s.resolve), s.resolve == "sources/a.json"; got != want {
					t.Errorf("Resolve found a write problem: %v, want %v", got, want)
				}
				return
			}
			if got := ps.Report(s.p); got != s.news {
				t.Errorf("news %v, want %v", got, s.news)
			}
		})
	}
	list := ps.List()
	if len(list) != 1 || list[0].File != "restarts.json" {
		t.Errorf("list %+v, want only restarts.json", list)
	}
	if c := ps.Counts(); c["sources/a.json"] != 3 || c["restarts.json"] != 1 {
		t.Errorf("counts %v, want 3 for sources/a.json and 1 for restarts.json", c)
	}
	var none *Problems
	if none.Report(Problem{File: "x"}) || len(none.List()) != 0 || len(none.Counts()) != 0 || none.Resolve("x") {
		t.Error("a nil list recorded something")
	}
	// Since stays the first time the file had a problem of that op.
	ps.Report(Problem{File: "sources/b.json", Op: OpWrite, Error: "one", Since: t0})
	ps.Report(Problem{File: "sources/b.json", Op: OpWrite, Error: "two", Since: t0.Add(time.Hour)})
	for _, p := range ps.List() {
		if p.File == "sources/b.json" && !p.Since.Equal(t0) {
			t.Errorf("since %v, want %v", p.Since, t0)
		}
	}
}
