package agentrun_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/sources"
)

// TestPushSurvivesCorruptStateFile: pods pushed, hostlet stopped, the
// push source's saved set damaged, hostlet started again beside a file
// source that delivers at once: the pushed pods keep running (the push
// source has not delivered, so nothing is pruned on its account).
func TestPushSurvivesCorruptStateFile(t *testing.T) {
	for _, c := range testkit.Damages() {
		t.Run(c.Name, func(t *testing.T) {
			e := newEnv(t)
			tf, token := tokenFile(t)
			local := filepath.Join(e.dir, "local")
			testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1"))
			cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: local, type: file, path: %s}\n  - {name: push, type: push}\n", tf, local))
			a := e.start(t, cfg)
			if code, reply := push(t, a.Addr, token, e.podList("1", "pushed", "pushed2")); code != 200 {
				t.Fatalf("push: %d %+v", code, reply)
			}
			before := e.waitPods(t, 60*time.Second, "pushed", "pushed2", "web")
			a.Stop()

			c.Do(t, filepath.Join(e.stateDir, "sources", "push.json"))
			restart := time.Now()
			b := e.start(t, cfg)
			doc := b.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
				return syncedSince(d, restart.Add(2*time.Second)), fmt.Sprintf("last sync %s", d.LastSync.Start)
			})
			if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("containers changed across the restart with a damaged push.json:\nbefore %+v\nafter  %+v", before, after)
			}
			// /status says why: push not delivered, its saved set unreadable
			// and kept, pruning paused; /metrics counts it.
			ps := findSource(doc, "push")
			t.Logf("push source: %+v; state errors %+v", ps, doc.StateErrors)
			if ps.Delivered || ps.Error != "" || !strings.Contains(ps.Notice, "saved set unreadable") || !strings.Contains(ps.Notice, "kept as sources/push.json.corrupt-") || !strings.HasSuffix(ps.Notice, sources.NoticeWaiting) {
				t.Errorf("push source %+v: want not delivered, no source error, a notice naming the kept copy and that pruning waits", ps)
			}
			if len(doc.StateErrors) != 1 || doc.StateErrors[0].File != "sources/push.json" || doc.StateErrors[0].Op != atomicfile.OpRead {
				t.Errorf("stateErrors %+v, want the read problem of sources/push.json", doc.StateErrors)
			} else if _, err := os.Lstat(filepath.Join(e.stateDir, doc.StateErrors[0].KeptAs)); err != nil {
				t.Errorf("kept copy: %v", err)
			}
			if v, ok := metricValue(scrape(t, b.Addr), "hostlet_state_file_errors_total", map[string]string{"file": "sources/push.json"}); !ok || v != 1 {
				t.Errorf("hostlet_state_file_errors_total{file=sources/push.json} = %v (%v), want 1", v, ok)
			}
			// A fresh push delivers: the pods it drops are removed again.
			if code, reply := push(t, b.Addr, token, e.podList("2", "pushed")); code != 200 {
				t.Fatalf("push after the restart: %d %+v", code, reply)
			}
			e.waitPods(t, 60*time.Second, "pushed", "web")
			b.WaitStatus(t, 10*time.Second, func(d api.Document) (bool, string) {
				s := findSource(d, "push")
				return s.Delivered && s.Error == "" && s.Notice == "", fmt.Sprintf("push %+v", s)
			})
		})
	}
}

// TestPushFullDisk: stateDir on a full tmpfs: a push that cannot be saved
// is refused with a 5xx and not applied (the running set stays), and after
// a restart the pods pushed before still run, unchanged.
func TestPushFullDisk(t *testing.T) {
	e := newEnv(t)
	// A tmpfs (root can mount one here): a real ENOSPC, as a full disk
	// gives.
	testkit.MountTmpfs(t, e.stateDir, 256<<10)
	tf, token := tokenFile(t)
	cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: push, type: push}\n", tf))
	a := e.start(t, cfg)
	if code, reply := push(t, a.Addr, token, e.podList("1", "one")); code != 200 {
		t.Fatalf("push: %d %+v", code, reply)
	}
	before := e.waitPods(t, 60*time.Second, "one")
	testkit.FillDisk(t, e.stateDir)

	code, reply := push(t, a.Addr, token, e.podList("2", "two"))
	t.Logf("push on a full disk: %d %+v", code, reply)
	if code != http.StatusInsufficientStorage || !strings.Contains(reply.Error, "no space left") || len(reply.Accepted) != 0 {
		t.Errorf("a push that could not be saved answered %d %+v, want 507 (no space left)", code, reply)
	}
	seen := time.Now()
	doc := a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, seen.Add(1500*time.Millisecond)), fmt.Sprintf("last sync %s", d.LastSync.Start)
	})
	if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("a refused push changed the containers:\nbefore %+v\nafter  %+v", before, after)
	}
	var pushWrite bool
	for _, p := range doc.StateErrors {
		pushWrite = pushWrite || (p.File == "sources/push.json" && p.Op == atomicfile.OpWrite)
	}
	if !pushWrite {
		t.Errorf("stateErrors %+v, want the failed write of sources/push.json", doc.StateErrors)
	}
	if v, ok := metricValue(scrape(t, a.Addr), "hostlet_state_file_errors_total", map[string]string{"file": "sources/push.json"}); !ok || v < 1 {
		t.Errorf("hostlet_state_file_errors_total{file=sources/push.json} = %v (%v), want at least 1", v, ok)
	}
	a.Stop()

	// Restarted on the still full disk: the pods pushed before still run.
	restart := time.Now()
	b := e.start(t, cfg)
	b.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, restart.Add(2*time.Second)), fmt.Sprintf("last sync %s", d.LastSync.Start)
	})
	if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("containers changed across the restart on a full disk:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestRestartsFileCorrupt: a damaged restarts.json does not stop hostlet.
func TestRestartsFileCorrupt(t *testing.T) {
	for _, c := range testkit.Damages() {
		t.Run(c.Name, func(t *testing.T) {
			e := newEnv(t)
			local := filepath.Join(e.dir, "local")
			testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1"))
			cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", local))
			testkit.WriteFile(t, filepath.Join(e.stateDir, "restarts.json"), `{"slots":{"web/app":{"count":3,"containerID":"x","engineCount":0}}}`)
			c.Do(t, filepath.Join(e.stateDir, "restarts.json"))
			a := e.start(t, cfg)
			e.waitPods(t, 60*time.Second, "web")
			doc := a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
				return len(d.Pods) == 1 && d.Pods[0].Phase == "Running", fmt.Sprintf("%d pods", len(d.Pods))
			})
			if n := doc.Pods[0].Containers[0].Restarts; n != 0 {
				t.Errorf("restarts %d, want counting from zero", n)
			}
			if len(doc.StateErrors) != 1 || doc.StateErrors[0].File != "restarts.json" || doc.StateErrors[0].Op != atomicfile.OpRead || doc.StateErrors[0].KeptAs == "" {
				t.Errorf("stateErrors %+v, want the read problem of restarts.json with its copy", doc.StateErrors)
			}
			if v, ok := metricValue(scrape(t, a.Addr), "hostlet_state_file_errors_total", map[string]string{"file": "restarts.json"}); !ok || v != 1 {
				t.Errorf("hostlet_state_file_errors_total{file=restarts.json} = %v (%v), want 1", v, ok)
			}
		})
	}
}

// TestPushMergeRejected: a push whose manifest the merge rejects (its id
// is a file source's) is answered 200 with it under rejected, not
// accepted, and one rejected event is recorded, not one per sync.
func TestPushMergeRejected(t *testing.T) {
	e := newEnv(t)
	tf, token := tokenFile(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "local"))
	cfg := e.config(t, fmt.Sprintf("tokenFile: %s\nsources:\n  - {name: local, type: file, path: %s}\n  - {name: push, type: push}\n", tf, local))
	a := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "web")

	code, reply := push(t, a.Addr, token, e.podList("pushed", "web", "api"))
	if code != 200 || fmt.Sprint(reply.Accepted) != "[api]" || len(reply.Rejected) != 1 || reply.Rejected[0].ID != "web" ||
		!strings.Contains(strings.Join(reply.Rejected[0].Reasons, ";"), "duplicate id") {
		t.Fatalf("push of a duplicate id: %d %+v; want 200, api accepted, web rejected as a duplicate", code, reply)
	}
	e.waitPods(t, 60*time.Second, "api", "web")
	seen := time.Now()
	a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, seen.Add(2*time.Second)), fmt.Sprintf("last sync %s", d.LastSync.Start)
	})
	var evs []eventlog.Event
	if err := json.Unmarshal([]byte(getOK(t, a.URL("/events"))), &evs); err != nil {
		t.Fatal(err)
	}
	var rejected []eventlog.Event
	for _, ev := range evs {
		if ev.Type == eventlog.Rejected {
			rejected = append(rejected, ev)
		}
	}
	if len(rejected) != 1 || rejected[0].Pod != "web" || rejected[0].Reason != "source push" || !strings.Contains(rejected[0].Message, "duplicate id") {
		t.Errorf("rejected events %+v, want one for web from push (duplicate id)", rejected)
	}
}

// TestSourceNeverDelivers: a source that has not delivered (its server
// answers 500 from the start) pauses pruning for every source, and /status
// says so: the pod the file source no longer declares keeps running.
func TestSourceNeverDelivers(t *testing.T) {
	e := newEnv(t)
	local := filepath.Join(e.dir, "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), e.pod("web", "1"))
	testkit.WriteFile(t, filepath.Join(local, "old.yaml"), e.pod("old", "1"))
	first := e.start(t, e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n", local)))
	e.waitPods(t, 60*time.Second, "old", "web")
	first.Stop()

	if err := os.Remove(filepath.Join(local, "old.yaml")); err != nil {
		t.Fatal(err)
	}
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	restart := time.Now()
	b := e.start(t, e.config(t, fmt.Sprintf("sources:\n  - {name: local, type: file, path: %s}\n  - {name: cmdb, type: http, url: %q, interval: 1s, timeout: 2s}\n", local, down.URL)))
	doc := b.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, restart.Add(2*time.Second)) && findSource(d, "cmdb").Error != "", fmt.Sprintf("last sync %s, cmdb %+v", d.LastSync.Start, findSource(d, "cmdb"))
	})
	if got := runningPods(e.containers(t)); fmt.Sprint(got) != "[old web]" {
		t.Errorf("running pods %v, want [old web]: nothing pruned before cmdb delivered", got)
	}
	cmdb, loc := findSource(doc, "cmdb"), findSource(doc, "local")
	t.Logf("cmdb: %+v", cmdb)
	if cmdb.Delivered || cmdb.Notice != sources.NoticeWaiting || !loc.Delivered || loc.Notice != "" {
		t.Errorf("cmdb %+v, local %+v: want cmdb not delivered with the waiting notice, local delivered", cmdb, loc)
	}
}
