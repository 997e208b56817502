package sync

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
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

// restartSyncer is a Syncer without an engine whose one desired pod p
// (restartPolicy Always, container app) events and results are fed by hand.
func restartSyncer(t *testing.T, clk *clock.Fake) *Syncer {
	t.Helper()
	s, err := New(nil, Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, Clock: clk},
		slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	m := manifest.Manifest{ID: "p", RestartPolicy: manifest.RestartAlways, Containers: []manifest.Container{{Name: "app", Image: "x"}}}
	s.SetDesired(Desired{Pods: []Pod{{Manifest: m}}, Ready: true})
	return s
}

func appEvent(action, id string) hruntime.Event {
	return hruntime.Event{Action: action, ContainerID: id, ExitCode: 1,
		Labels: map[string]string{hruntime.LabelPod: "p", hruntime.LabelContainer: "app"}}
}

// hostletRestarted is the result of a pass that started p's exited app
// container c1 again.
func hostletRestarted() []Result {
	return []Result{{ID: "p", Plan: PodPlan{ID: "p", Desired: &Pod{Manifest: manifest.Manifest{ID: "p"}}}, Applied: []Change{{Container: "app", Action: ActionRestart,
		Current: &hruntime.Container{ID: "c1", State: hruntime.StateExited, ExitCode: 1}}}}}
}

// TestEachRestartCountedOnce: each run after a container's first is one
// restart, whoever started it and whatever the order of the die event,
// hostlet's start and the start event (Podman restarts late and its events
// come late; the sync loop handles queued events only between passes).
// Steps: "die" and "start" are engine events of container c1; "hostlet"
// is hostlet starting c1 again after it exited (marked, then recorded),
// "failed" such a start failing, "create" hostlet's first start of c1,
// "adopt" c1 found running at start, "list" a pass listing it running,
// "listen" the sync loop beginning to listen to events; "hostletlost" a
// restart by hostlet whose start event never comes, "hour" an hour
// passing, "die0" a die event with exit code 0, "onfailure" the pod's
// restartPolicy becoming OnFailure.
func TestEachRestartCountedOnce(t *testing.T) {
	cases := []struct {
		name  string
		steps string
		want  int
	}{
		{"a first start is no restart", "start", 0},
		{"hostlet creates and starts it", "create start", 0},
		{"a pass lists it running before its start event comes", "create list start", 0},
		{"created before hostlet listened, restarted by the engine", "create list listen die start", 1},
		{"the engine restarts it", "start die start", 1},
		{"the engine restarts it twice", "create start die start die start", 2},
		{"hostlet restarts it after its die event", "start die hostlet start", 1},
		{"hostlet restarts it before its die event comes", "start hostlet die start", 1},
		{"hostlet restarts it, no die event", "start hostlet start", 1},
		{"two passes restart it before the loop handles the events", "start hostlet hostlet start start", 2},
		{"two passes restart it, die events queued", "start hostlet hostlet die start die start", 2},
		{"hostlet's start fails, the engine restarts it", "start die failed start", 1},
		{"hostlet's start fails, the next pass restarts it", "start die failed hostlet start", 1},
		{"a duplicate die event", "start die die start", 1},
		{"an adopted container restarted by the engine", "adopt die start", 1},
		{"its start event missed, the engine restarts it long after", "start hostletlost hour die start", 2},
		{"OnFailure: a start after a clean exit is a user's, not counted", "onfailure start die0 start", 0},
		{"OnFailure: the engine restarts it after a failure", "onfailure start die start", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
			s := restartSyncer(t, clk)
			for _, step := range strings.Fields(c.steps) {
				switch step {
				case "die", "start":
					s.handleEvent(t.Context(), appEvent(step, "c1"))
				case "hostlet":
					s.markOwnStart("c1")
					s.record(hostletRestarted())
				case "failed":
					s.markOwnStart("c1")
					s.unmarkOwnStart("c1")
				case "create":
					s.markOwnStart("c1")
				case "list":
					s.mu.Lock()
					s.podStateLocked("p").knownStarted("app", "c1")
					s.mu.Unlock()
				case "listen":
					// What Run does as it begins to listen.
					s.mu.Lock()
					clear(s.pods.ownStarts)
					s.mu.Unlock()
				case "hostletlost":
					// hostlet restarts it; the start event never comes.
					s.markOwnStart("c1")
					s.record(hostletRestarted())
				case "onfailure":
					m := manifest.Manifest{ID: "p", RestartPolicy: manifest.RestartOnFailure, Containers: []manifest.Container{{Name: "app", Image: "x"}}}
					s.SetDesired(Desired{Pods: []Pod{{Manifest: m}}, Ready: true})
				case "hour":
					clk.Advance(time.Hour)
				case "die0":
					e := appEvent("die", "c1")
					e.ExitCode = 0
					s.handleEvent(t.Context(), e)
				case "adopt":
					s.adoptedStart("p", "app", "c1", clk.Now())
				default:
					t.Fatalf("unknown step %q", step)
				}
				clk.Advance(time.Second)
			}
			s.mu.Lock()
			n, crashes := s.pods.restarts.count("p", "app"), 0
			if ps := s.pods.states["p"]; ps != nil {
				crashes = len(ps.crashes["app"])
			}
			s.mu.Unlock()
			if n != c.want || crashes != c.want {
				t.Errorf("restarts %d, crashes %d; want %d each", n, crashes, c.want)
			}
		})
	}
}

// TestAdoptedWhileTheEngineWaitsToRestart: a container adopted while
// Docker waits to restart it (its restart count already raised) counts
// that restart once, when its start event comes.
func TestAdoptedWhileTheEngineWaitsToRestart(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC))
	s := restartSyncer(t, clk)
	s.mu.Lock()
	// What the hostlet before this one saw: two engine restarts.
	s.pods.restarts.observe("p", "app", "c1", 2)
	s.pods.restarts.add("p", "app", 2)
	// This hostlet adopts it: it died a third time, Docker waits.
	s.pods.restarts.observe("p", "app", "c1", restartsMade(hruntime.Details{RestartCount: 3, Restarting: true}))
	s.mu.Unlock()
	s.adoptedStart("p", "app", "c1", clk.Now())
	s.handleEvent(t.Context(), appEvent("start", "c1"))
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, engine := s.pods.restarts.count("p", "app"), s.pods.restarts.Slots[slotKey("p", "app")].EngineCount; n != 3 || engine != 3 {
		t.Errorf("restarts %d, engine count %d; want 3 each", n, engine)
	}
}

// TestRestartsMade: the engine's restart count, but for the restart it
// waits to make.
func TestRestartsMade(t *testing.T) {
	for _, c := range []struct {
		d    hruntime.Details
		want int
	}{
		{hruntime.Details{RestartCount: 3}, 3},
		{hruntime.Details{RestartCount: 3, Restarting: true}, 2},
		{hruntime.Details{Restarting: true}, 0},
	} {
		if got := restartsMade(c.d); got != c.want {
			t.Errorf("restartsMade(%+v) = %d, want %d", c.d, got, c.want)
		}
	}
}
