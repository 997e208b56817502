package release

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

const (
	testRev     = "2222222222222222222222222222222222222222"
	waveTimeout = 10 * time.Minute
)

var t0 = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

// What a fake host reports once its set is written.
const (
	reportComplete    = "complete"
	reportRolledBack  = "rolled back"
	reportFailed      = "failed"
	reportProgressing = "progressing"
	reportSilent      = "silent"
)

// testHosts are the hosts of every test set: web-1 the canary.
var testHosts = []struct{ name, role string }{{"web-1", "canary"}, {"web-2", "web"}, {"web-3", "web"}}

// podHash is the spec hash of pod web at rev that a host reports.
func podHash(rev string) string { return "v1:web-" + rev[:7] }

// testSet is a set of the three test hosts at rev, each with source
// fleet making pod web.
func testSet(t *testing.T, rev string) *Set {
	t.Helper()
	set := &Set{Ref: "main", byName: map[string]*Host{}}
	for _, th := range testHosts {
		h := &Host{Name: th.name, Config: th.name + ".yaml", Labels: map[string]string{"role": th.role},
			Sets: []fleet.Published{{Release: rev, Source: "fleet"}}, modRevs: map[string]int64{}, pods: map[string]string{"web": podHash(rev)}}
		if errs, err := h.encode(); err != nil || len(errs) > 0 {
			t.Fatalf("encode %s: %v %v", th.name, err, errs)
		}
		if err := set.add(h); err != nil {
			t.Fatal(err)
		}
	}
	return set
}

// fakeHosts stands in for the hosts' agents under prefix: on every set
// written for a host, it writes the host's status document as the
// reporter does, in the state report(host) gives. It stops when the test
// ends.
func fakeHosts(t *testing.T, cli *clientv3.Client, prefix string, report func(host string) string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg gosync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	resp, err := cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	watch := cli.Watch(ctx, prefix+"/desired/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	wg.Go(func() {
		for wresp := range watch {
			for _, ev := range wresp.Events {
				host, source, _ := strings.Cut(strings.TrimPrefix(string(ev.Kv.Key), prefix+"/desired/"), "/")
				p, err := fleet.DecodePublished(ev.Kv.Value, source)
				if err != nil {
					t.Errorf("host %s: %v", host, err)
					continue
				}
				state := report(host)
				if state == reportSilent {
					continue
				}
				key, _, _ := reporter.Keys(prefix, host)
				b, _ := json.Marshal(statusDoc(host, p.Release, state))
				if _, err := cli.Put(ctx, key, string(b)); err != nil && ctx.Err() == nil {
					t.Errorf("put status of %s: %v", host, err)
				}
			}
		}
	})
}

// statusDoc is the status document of a host whose source fleet took
// rev, pod web in state.
func statusDoc(host, rev, state string) api.Document {
	pod := hsync.PodStatus{ID: "web", Source: "fleet", Revision: rev, Phase: hsync.PhaseRunning,
		Rollout: &hsync.Rollout{State: hsync.RolloutComplete, Revision: rev, Hash: podHash(rev)}}
	switch state {
	case reportRolledBack:
		pod.Rollout.State, pod.Rollout.Reason = hsync.RolloutRolledBack, "readiness probe failed 3 times"
	case reportProgressing:
		pod.Rollout.State = hsync.RolloutProgressing
	case reportFailed:
		pod.Phase, pod.Rollout = hsync.PhaseFailed, nil
		pod.Reason, pod.Message = "StartError", "StartError: container app: start failed"
	}
	return api.Document{Hostname: host, Time: t0, Sources: []sources.Status{{Name: "fleet", Type: "git", Revision: rev, Delivered: true}}, Pods: []hsync.PodStatus{pod}}
}

// published lists the test hosts whose key holds rev under prefix.
func published(t *testing.T, cli *clientv3.Client, prefix, rev string) []string {
	t.Helper()
	var out []string
	for _, th := range testHosts {
		resp, err := cli.Get(t.Context(), fleet.DesiredKey(prefix, th.name, "fleet"))
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 1 {
			if p, err := fleet.DecodePublished(resp.Kvs[0].Value, "fleet"); err == nil && p.Release == rev {
				out = append(out, th.name)
			}
		}
	}
	return out
}

// record reads the release record of rev under prefix.
func record(t *testing.T, cli *clientv3.Client, prefix, rev string) fleet.Release {
	t.Helper()
	p := &Publisher{Etcd: cli, Prefix: prefix}
	rec, err := p.getRelease(t.Context(), rev)
	if err != nil || rec == nil {
		t.Fatalf("release record of %s: %v, %v", rev, rec, err)
	}
	return *rec
}

// lines collects a publish's progress.
type lines struct {
	mu gosync.Mutex
	b  strings.Builder
}

func (l *lines) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format, args...)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPublishWaves: the wave logic, on an embedded etcd and a fake clock.
// A wave is written, then waited for until its hosts report the release
// complete, before the next; a host that rolls back, fails a pod of the
// release, or has not reported when the wave's timeout passes on the
// clock halts the release: later waves (and the rest of a batch's wave)
// are not written, and the record says why. --max-unavailable writes a
// wave a batch at a time. The record's times are the clock's.
func TestPublishWaves(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	canaryThenRest := []string{"canary: role=canary", "rest: *"}
	for i, tc := range []struct {
		name           string
		waves          []string
		maxUnavailable string
		report         map[string]string // host: what it reports (default complete)
		// timeout: advance the clock past the wave timeout once the
		// engine waits (and, with waitFor, once a host waits for it).
		timeout     bool
		waitFor     string
		wantErr     string
		wantState   string
		wantWaves   []string // name=State
		wantWritten []string
		wantLines   []string
	}{
		{
			name:      "no waves: every host in wave all",
			wantState: fleet.StateComplete, wantWaves: []string{"all=Complete"}, wantWritten: []string{"web-1", "web-2", "web-3"},
			wantLines: []string{"release 2222222 (main): 3 hosts of 3 change", "  wave all (*): changes web-1, web-2, web-3", "wave all: written (3 hosts); waiting up to 10m0s", "wave all: complete"},
		},
		{
			name: "canary, then the rest", waves: canaryThenRest,
			wantState: fleet.StateComplete, wantWaves: []string{"canary=Complete", "rest=Complete"}, wantWritten: []string{"web-1", "web-2", "web-3"},
			wantLines: []string{"wave canary: written (1 host); waiting up to 10m0s", "wave canary: complete", "wave rest: written (2 hosts); waiting up to 10m0s", "wave rest: complete"},
		},
		{
			name: "canary rolls back: the rest not written", waves: canaryThenRest, report: map[string]string{"web-1": reportRolledBack},
			wantErr:   "release 2222222 halted: wave canary: host web-1: pod web rolled back: readiness probe failed 3 times",
			wantState: fleet.StateHalted, wantWaves: []string{"canary=Halted", "rest=Pending"}, wantWritten: []string{"web-1"},
			wantLines: []string{"wave canary: halted: host web-1: pod web rolled back", "1 host changed; release halted, waves not written: rest"},
		},
		{
			name: "a pod of the release fails with no rollback coming", waves: canaryThenRest, report: map[string]string{"web-3": reportFailed},
			wantErr:   "wave rest: host web-3: pod web failed: StartError: container app: start failed",
			wantState: fleet.StateHalted, wantWaves: []string{"canary=Complete", "rest=Halted"}, wantWritten: []string{"web-1", "web-2", "web-3"},
			wantLines: []string{"3 hosts changed; release halted, waves not written: none"},
		},
		{
			name: "silent canary: halted when the wave's time passes on the clock", waves: canaryThenRest, report: map[string]string{"web-1": reportSilent}, timeout: true,
			wantErr:   "wave canary: not reported within --wave-timeout 10m0s: web-1: no status reported",
			wantState: fleet.StateHalted, wantWaves: []string{"canary=Halted", "rest=Pending"}, wantWritten: []string{"web-1"},
		},
		{
			name: "a rollout still going at the timeout is named", waves: canaryThenRest, report: map[string]string{"web-1": reportProgressing}, timeout: true, waitFor: "pod web rollout Progressing",
			wantErr:   "not reported within --wave-timeout 10m0s: web-1: pod web rollout Progressing",
			wantState: fleet.StateHalted, wantWaves: []string{"canary=Halted", "rest=Pending"}, wantWritten: []string{"web-1"},
		},
		{
			name: "max-unavailable 1: one host at a time", maxUnavailable: "1",
			wantState: fleet.StateComplete, wantWaves: []string{"all=Complete"}, wantWritten: []string{"web-1", "web-2", "web-3"},
			wantLines: []string{"wave all (hosts 1-1 of 3): written (1 host)", "wave all (hosts 2-2 of 3): written (1 host)", "wave all (hosts 3-3 of 3): written (1 host)"},
		},
		{
			name: "max-unavailable: a batch halts, the rest of its wave not written", maxUnavailable: "34%", report: map[string]string{"web-1": reportRolledBack},
			wantErr:   "wave all (hosts 1-2 of 3): host web-1: pod web rolled back",
			wantState: fleet.StateHalted, wantWaves: []string{"all=Halted"}, wantWritten: []string{"web-1", "web-2"},
			wantLines: []string{"1 host of wave all not written", "2 hosts changed; release halted, waves not written: none"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fmt.Sprintf("/waves-%d", i)
			fakeHosts(t, cli, prefix, func(host string) string {
				if r := tc.report[host]; r != "" {
					return r
				}
				return reportComplete
			})
			fake := clock.NewFake(t0)
			out := &lines{}
			p := &Publisher{Etcd: cli, Prefix: prefix, Clock: fake, Printf: out.printf}
			seen := make(chan struct{})
			var once gosync.Once
			p.progressed = func(_, waiting string) {
				if waiting == tc.waitFor {
					once.Do(func() { close(seen) })
				}
			}
			if tc.waitFor == "" {
				close(seen)
			}
			o := Options{WaveTimeout: waveTimeout}
			for _, w := range tc.waves {
				wave, err := fleet.ParseWave(w)
				if err != nil {
					t.Fatal(err)
				}
				o.Waves = append(o.Waves, wave)
			}
			var err error
			if o.MaxUnavailable, err = ParseMaxUnavailable(tc.maxUnavailable); err != nil {
				t.Fatal(err)
			}
			if tc.timeout {
				advanceWhenWaiting(t, fake, waveTimeout, seen)
			}

			rep, err := p.Publish(t.Context(), testSet(t, testRev), o)
			if rep == nil || (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Publish: report %v, error %v; want error %q\n%s", rep != nil, err, tc.wantErr, out)
			}
			rec := record(t, cli, prefix, testRev)
			var waves []string
			for _, w := range rec.Waves {
				waves = append(waves, w.Name+"="+w.State)
			}
			if rec.State != tc.wantState || !slices.Equal(waves, tc.wantWaves) || !rec.Time.Equal(t0) || !rec.Updated.Equal(fake.Now()) {
				t.Errorf("record: %s, waves %v, time %s, updated %s; want %s, %v, the clock's %s and %s", rec.State, waves, rec.Time, rec.Updated, tc.wantState, tc.wantWaves, t0, fake.Now())
			}
			if tc.wantErr != "" && !slices.Contains(rep.Errors, rec.Reason) {
				t.Errorf("report errors %v lack the record's reason %q", rep.Errors, rec.Reason)
			}
			if got := published(t, cli, prefix, testRev); !slices.Equal(got, tc.wantWritten) {
				t.Errorf("hosts written: %v, want %v\n%s", got, tc.wantWritten, out)
			}
			for _, want := range tc.wantLines {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// advanceWhenWaiting moves fake d forward once a timer waits on it (the
// wave's timeout) and ready is closed, in a goroutine the test waits for.
func advanceWhenWaiting(t *testing.T, fake *clock.Fake, d time.Duration, ready <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg gosync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() {
		if fake.WaitForTimers(ctx, 1) != nil {
			return
		}
		select {
		case <-ready:
			fake.Advance(d)
		case <-ctx.Done():
		}
	})
}

// TestPublishEarlierRecord: what a release's earlier record makes of a
// publish of the same commit. A complete release published again writes
// nothing; a dry run writes nothing; a halted or interrupted (Waiting)
// release is refused as it is; --resume waits again for the hosts of its
// unfinished wave (written before: unchanged now) and goes on with the
// later waves, keeping the release's start time; a complete release has
// nothing to resume, and a release without a record cannot be resumed.
func TestPublishEarlierRecord(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	canaryThenRest := []string{"canary: role=canary", "rest: *"}
	halted := func(state string) func(t *testing.T, prefix string) {
		return func(t *testing.T, prefix string) {
			// web-1 (the canary) was written and reports the release
			// complete since.
			etcdtest.Put(t, cli, fleet.DesiredKey(prefix, "web-1", "fleet"), string(testSet(t, testRev).byName["web-1"].enc[0]))
			b, _ := json.Marshal(statusDoc("web-1", testRev, reportComplete))
			key, _, _ := reporter.Keys(prefix, "web-1")
			etcdtest.Put(t, cli, key, string(b))
			etcdtest.Put(t, cli, fleet.ReleaseKey(prefix, testRev), fmt.Sprintf(`{"rev": %q, "ref": "main", "time": "2026-12-01T10:00:00Z", "updated": "2026-12-05T14:00:00Z", "state": %q, "reason": "wave canary: host web-1: pod web rolled back", "hostsChanged": ["web-1", "web-2", "web-3"],
  "waves": [{"name": "canary", "selector": "role=canary", "hosts": ["web-1"], "changed": ["web-1"], "state": %[2]q}, {"name": "rest", "selector": "*", "hosts": ["web-2", "web-3"], "changed": ["web-2", "web-3"], "state": "Pending"}]}`, testRev, state))
		}
	}
	complete := func(t *testing.T, prefix string) {
		fakeHosts(t, cli, prefix, func(string) string { return reportComplete })
		p := &Publisher{Etcd: cli, Prefix: prefix, Clock: clock.NewFake(t0)}
		if _, err := p.Publish(t.Context(), testSet(t, testRev), Options{WaveTimeout: waveTimeout}); err != nil {
			t.Fatalf("first publish: %v", err)
		}
	}
	for i, tc := range []struct {
		name  string
		setup func(t *testing.T, prefix string)
		waves []string
		o     Options
		// wantErr: the error; wantNoReport: Publish stops before deciding
		// anything.
		wantErr      string
		wantNoReport bool
		wantState    string
		wantChanged  []string // the report's HostsChanged
		wantWrites   bool     // the store moved
		wantLines    []string
	}{
		{
			name: "a complete release again writes nothing", setup: complete,
			wantState: fleet.StateWaiting, wantChanged: []string{}, wantLines: []string{"release 2222222 (main): 0 hosts of 3 change"},
		},
		{
			name: "a dry run writes nothing", waves: canaryThenRest, o: Options{DryRun: true},
			wantState: fleet.StateWaiting, wantChanged: []string{"web-1", "web-2", "web-3"}, wantLines: []string{"  wave canary (role=canary): changes web-1", "  wave rest (*): changes web-2, web-3"},
		},
		{
			name: "a halted release is refused", setup: halted(fleet.StateHalted), waves: canaryThenRest,
			wantErr: "release 2222222 halted at 2026-12-05T14:00:00Z: wave canary: host web-1: pod web rolled back; publish a fix (another commit), or --resume main", wantNoReport: true,
		},
		{
			name: "an interrupted release is refused", setup: halted(fleet.StateWaiting), waves: canaryThenRest,
			wantErr: "release 2222222 is still Waiting (since 2026-12-05T14:00:00Z)", wantNoReport: true,
		},
		{
			name: "resume waits again for the halted wave, then goes on", setup: halted(fleet.StateHalted), o: Options{Resume: true},
			wantState: fleet.StateComplete, wantChanged: []string{"web-1", "web-2", "web-3"}, wantWrites: true,
			wantLines: []string{"resuming release 2222222, halted: wave canary: host web-1: pod web rolled back", "wave canary: written (0 hosts, 1 host written before)", "wave rest: written (2 hosts)", "wave rest: complete"},
		},
		{
			name: "a complete release has nothing to resume", setup: complete, o: Options{Resume: true},
			wantState: fleet.StateComplete, wantChanged: []string{"web-1", "web-2", "web-3"}, wantLines: []string{"release 2222222 is complete: nothing to resume"},
		},
		{
			name: "no record to resume", o: Options{Resume: true},
			wantErr: "--resume main: no release record of " + testRev, wantNoReport: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := fmt.Sprintf("/earlier-%d", i)
			if tc.setup != nil {
				tc.setup(t, prefix)
			}
			fakeHosts(t, cli, prefix, func(string) string { return reportComplete })
			resp, err := cli.Get(t.Context(), "/", clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			before := resp.Header.Revision
			out := &lines{}
			p := &Publisher{Etcd: cli, Prefix: prefix, Clock: clock.NewFake(t0), Printf: out.printf}
			o := tc.o
			o.WaveTimeout = waveTimeout
			for _, w := range tc.waves {
				wave, err := fleet.ParseWave(w)
				if err != nil {
					t.Fatal(err)
				}
				o.Waves = append(o.Waves, wave)
			}

			rep, err := p.Publish(t.Context(), testSet(t, testRev), o)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) || (rep == nil) != tc.wantNoReport {
				t.Fatalf("Publish: report %v, error %v; want error %q, report %v\n%s", rep != nil, err, tc.wantErr, !tc.wantNoReport, out)
			}
			if rep != nil && (rep.Release.State != tc.wantState || !slices.Equal(rep.Release.HostsChanged, tc.wantChanged)) {
				t.Errorf("report: release %s changing %v; want %s, %v", rep.Release.State, rep.Release.HostsChanged, tc.wantState, tc.wantChanged)
			}
			if o.Resume && rep != nil && tc.wantWrites && !rep.Release.Time.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
				t.Errorf("resumed release starts at %s, want the record's start", rep.Release.Time)
			}
			resp, err = cli.Get(t.Context(), "/", clientv3.WithCountOnly())
			if err != nil {
				t.Fatal(err)
			}
			if wrote := resp.Header.Revision != before; wrote != tc.wantWrites {
				t.Errorf("store revision %d -> %d; want writes: %v", before, resp.Header.Revision, tc.wantWrites)
			}
			for _, want := range tc.wantLines {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
