package sync

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/eventlog"
)

// TestRestartsFileDamaged: a restarts.json cut short, emptied, replaced by
// garbage or unreadable (a folder in its place: the tests run as root)
// does not stop the syncer: counts start from zero, the damaged copy is
// kept beside it, the problem is reported (and stays listed after the
// next good save, which writes a good file).
func TestRestartsFileDamaged(t *testing.T) {
	good := `{"slots":{"web/app":{"count":3,"containerID":"c1","engineCount":1}}}`
	tests := []struct {
		name string
		do   func(t *testing.T, path string)
	}{
		{name: "truncated", do: func(t *testing.T, path string) { writeRestartsFile(t, path, good[:len(good)/2]) }},
		{name: "empty", do: func(t *testing.T, path string) { writeRestartsFile(t, path, "") }},
		{name: "garbage", do: func(t *testing.T, path string) { writeRestartsFile(t, path, "\x00\x17garbage{]") }},
		{name: "null", do: func(t *testing.T, path string) { writeRestartsFile(t, path, "null") }},
		{name: "negative count", do: func(t *testing.T, path string) { writeRestartsFile(t, path, `{"slots":{"web/app":{"count":-1}}}`) }},
		{name: "unreadable", do: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, RestartsFile)
			tt.do(t, path)
			s, err := New(nil, Options{StateDir: dir}, slog.New(slog.DiscardHandler), eventlog.NewLog(10))
			if err != nil {
				t.Fatalf("a damaged %s stops the syncer: %v", RestartsFile, err)
			}
			var problems atomicfile.Problems
			s.TrackStateFiles(&problems)
			if n := len(s.pods.restarts.Slots); n != 0 {
				t.Errorf("%d slots loaded from a damaged file, want 0", n)
			}
			list := problems.List()
			if len(list) != 1 || list[0].File != RestartsFile || list[0].Op != atomicfile.OpRead || !strings.HasPrefix(list[0].KeptAs, RestartsFile+".corrupt-") {
				t.Fatalf("problems %+v, want the read problem of %s with its copy", list, RestartsFile)
			}
			if _, err := os.Lstat(filepath.Join(dir, list[0].KeptAs)); err != nil {
				t.Errorf("damaged copy: %v", err)
			}
			s.pods.restarts.add("web", "app", 1)
			s.saveRestarts()
			rs, err := loadRestarts(dir, nil)
			if err != nil || rs.file.Damaged() != nil || rs.count("web", "app") != 1 {
				t.Errorf("after a save: %v, damaged %+v, count %d; want a good file counting 1", err, rs.file.Damaged(), rs.count("web", "app"))
			}
			if l := problems.List(); len(l) != 1 {
				t.Errorf("problems after a good save %+v, want the read problem still", l)
			}
		})
	}
}

// TestRestartsSaveFails: a save that fails is an error and a reported
// problem; the next save writes again (nothing changed since) and, when
// good, clears it.
func TestRestartsSaveFails(t *testing.T) {
	dir := t.TempDir()
	rs, err := loadRestarts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	var problems atomicfile.Problems
	rs.file.Track(&problems)
	// A folder where the temp file's rename must go fails the save.
	if err := os.Mkdir(filepath.Join(dir, RestartsFile), 0o700); err != nil {
		t.Fatal(err)
	}
	writeRestartsFile(t, filepath.Join(dir, RestartsFile, "x"), "")
	rs.add("web", "app", 1)
	if err := rs.write(rs.snapshot()); err == nil {
		t.Fatal("save over a folder succeeded")
	}
	if l := problems.List(); len(l) != 1 || l[0].Op != atomicfile.OpWrite {
		t.Errorf("problems %+v, want the failed write", l)
	}
	if err := os.RemoveAll(filepath.Join(dir, RestartsFile)); err != nil {
		t.Fatal(err)
	}
	if err := rs.write(rs.snapshot()); err != nil {
		t.Fatal(err)
	}
	if l := problems.List(); len(l) != 0 {
		t.Errorf("problems after a good save %+v, want none", l)
	}
}

func writeRestartsFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRestartsLaterSnapshotWins: the counts are snapshotted under the
// syncer's lock and written outside it, so two saves may write in either
// order; an older snapshot never overwrites a newer one on disk.
func TestRestartsLaterSnapshotWins(t *testing.T) {
	dir := t.TempDir()
	rs, err := loadRestarts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	rs.add("web", "app", 1)
	older := rs.snapshot()
	rs.add("web", "app", 1)
	newer := rs.snapshot()
	if rs.snapshot() != nil {
		t.Error("a snapshot with nothing changed since the last one, want nil")
	}
	if err := rs.write(newer); err != nil {
		t.Fatal(err)
	}
	if err := rs.write(older); err != nil {
		t.Fatal(err)
	}
	again, err := loadRestarts(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := again.Slots[slotKey("web", "app")].Count; n != 2 {
		t.Errorf("restarts on disk %d, want 2 (the newer snapshot)", n)
	}
}
