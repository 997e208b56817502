package reporter_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	gosync "sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
)

// doc is a status document whose content the test changes.
type doc struct {
	mu   gosync.Mutex
	pods []string
	n    int
}

func (d *doc) set(pods ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pods = pods
}

// get returns the document; "time" changes on every call, as the real one.
func (d *doc) get() any {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.n++
	return map[string]any{"hostname": "h1", "time": time.Now().UTC(), "lastSync": map[string]any{"n": d.n}, "pods": d.pods}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// run runs a reporter until the returned stop is called (or the test ends);
// stop waits for Run to return.
func run(t *testing.T, cli *clientv3.Client, opts reporter.Options) (stop func()) {
	t.Helper()
	return running(t, reporter.New(cli, opts, quiet()))
}

func get(t *testing.T, cli *clientv3.Client, key string, opts ...clientv3.OpOption) *clientv3.GetResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, key, opts...)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	return resp
}

func timeToLive(t *testing.T, cli *clientv3.Client, lease int64) *clientv3.LeaseTimeToLiveResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.TimeToLive(ctx, clientv3.LeaseID(lease), clientv3.WithAttachedKeys())
	if err != nil {
		t.Fatalf("TimeToLive of lease %x: %v", lease, err)
	}
	return resp
}

// aliveLease waits for the liveness key at key to be under a lease for
// which ready holds, and returns the lease.
func aliveLease(t *testing.T, cli *clientv3.Client, key string, ready func(lease int64) (bool, string)) int64 {
	t.Helper()
	var lease int64
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		r := get(t, cli, key)
		if len(r.Kvs) == 0 {
			return false, "no liveness key"
		}
		if lease = r.Kvs[0].Lease; lease == 0 {
			return false, "liveness key without a lease"
		}
		return ready(lease)
	})
	return lease
}

func TestLeaseTTL(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{
		time.Second: 10 * time.Second, 3 * time.Second: 10 * time.Second, 4 * time.Second: 12 * time.Second,
		10 * time.Second: 30 * time.Second, time.Minute: 3 * time.Minute,
	} {
		if got := reporter.LeaseTTL(in); got != want {
			t.Errorf("LeaseTTL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestLiveness: the liveness key is under a lease of 3 × interval (at
// least 10 s) that the reporter keeps alive; stopping the reporter revokes
// it, so the key is gone at once, while the status key (no lease) stays.
func TestLiveness(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	for _, tt := range []struct {
		interval time.Duration
		ttl      int64
	}{{time.Second, 10}, {5 * time.Second, 15}} {
		t.Run(tt.interval.String(), func(t *testing.T) {
			host := fmt.Sprintf("h-%d", tt.ttl)
			statusKey, aliveKey, _ := reporter.Keys("/p", host)
			d := &doc{}
			stop := run(t, cli, reporter.Options{Prefix: "/p", Hostname: host, Interval: tt.interval, Document: d.get, Events: eventlog.NewLog(10)})
			lease := aliveLease(t, cli, aliveKey, func(int64) (bool, string) { return true, "" })
			ttl := timeToLive(t, cli, lease)
			if ttl.GrantedTTL != tt.ttl || ttl.TTL <= 0 || ttl.TTL > tt.ttl {
				t.Errorf("liveness lease: granted %d s, left %d s; want granted %d s (3 × %s, at least 10 s)", ttl.GrantedTTL, ttl.TTL, tt.ttl, tt.interval)
			}
			if len(ttl.Keys) != 1 || string(ttl.Keys[0]) != aliveKey {
				t.Errorf("lease %x holds %q, want only %s", lease, ttl.Keys, aliveKey)
			}
			if tt.interval == time.Second {
				// The lease is kept alive: watched for five intervals, its
				// TTL stays above 6 s (without keep-alives it would fall to
				// 5 s or less; the margin is for keep-alives late under load).
				minTTL := ttl.TTL
				for start := time.Now(); time.Since(start) < 5*tt.interval; time.Sleep(100 * time.Millisecond) {
					minTTL = min(minTTL, timeToLive(t, cli, lease).TTL)
				}
				if minTTL < tt.ttl-4 {
					t.Errorf("liveness lease ran down to %d s of %d s within 3 intervals: not kept alive", minTTL, tt.ttl)
				}
			}
			// The liveness key is written before the status in a report.
			testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
				return len(get(t, cli, statusKey).Kvs) > 0, "no status key"
			})
			st := get(t, cli, statusKey)
			if len(st.Kvs) != 1 || st.Kvs[0].Lease != 0 {
				t.Fatalf("status key %s: %d keys, lease %v; want one key without a lease", statusKey, len(st.Kvs), st.Kvs)
			}

			stop()
			if r := get(t, cli, aliveKey); len(r.Kvs) != 0 {
				t.Errorf("liveness key still there after the reporter stopped: %s", r.Kvs[0].Value)
			}
			if r := timeToLive(t, cli, lease); r.TTL != -1 {
				t.Errorf("liveness lease left %d s after the reporter stopped, want revoked (-1)", r.TTL)
			}
			if r := get(t, cli, statusKey); len(r.Kvs) != 1 {
				t.Errorf("the status key went with the reporter; the last report must outlive the host")
			}
		})
	}
}

// TestLivenessLapsesWithoutRevoke: a process that dies cannot revoke its
// lease; the liveness key then lapses by TTL (10 s at a 1 s interval). The
// reporter's client is closed under it (no more keep-alives, and the revoke
// at the end fails), as when the process is killed.
func TestLivenessLapsesWithoutRevoke(t *testing.T) {
	srv := etcdtest.Start(t)
	watcher := srv.Client(t)
	dying, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	_, aliveKey, _ := reporter.Keys("/p", "h1")
	stop := run(t, dying, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Second, Document: (&doc{}).get, Events: eventlog.NewLog(10)})
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) { return len(get(t, watcher, aliveKey).Kvs) == 1, "no liveness key" })

	_ = dying.Close()
	died := time.Now()
	stop()
	if len(get(t, watcher, aliveKey).Kvs) != 1 {
		t.Fatal("the liveness key went at once although the reporter's client was closed (nothing could revoke it); this test proves nothing")
	}
	testkit.WaitFor(t, reporter.LeaseTTL(time.Second)+5*time.Second, func() (bool, string) {
		return len(get(t, watcher, aliveKey).Kvs) == 0, fmt.Sprintf("liveness key still there %s after the host died", time.Since(died).Round(time.Millisecond))
	})
	if took := time.Since(died); took < reporter.LeaseTTL(time.Second)-2*time.Second {
		t.Errorf("liveness key lapsed %s after the host died, before its TTL", took)
	}
	t.Logf("liveness key lapsed %s after the host died", time.Since(died).Round(100*time.Millisecond))
}

// TestEvents: events go under <prefix>/events/<host>/ in the order they were
// recorded, as the JSON /events shows, each under a 48 h lease.
func TestEvents(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ev := eventlog.NewLog(100)
	_, _, prefix := reporter.Keys("/p", "h1")
	run(t, cli, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Second, Document: (&doc{}).get, Events: ev})
	// Events recorded in one go, with equal times, keep their order.
	now := time.Now()
	for i := range 5 {
		ev.Record(eventlog.Event{Time: now, Type: eventlog.Create, Pod: fmt.Sprintf("p%d", i), Reason: "new pod"})
	}
	var kvs []string
	var lease int64
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		r := get(t, cli, prefix, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		kvs = kvs[:0]
		for _, kv := range r.Kvs {
			kvs = append(kvs, string(kv.Value))
			lease = kv.Lease
		}
		return len(kvs) == 5, fmt.Sprintf("%d events in etcd", len(kvs))
	})
	for i, v := range kvs {
		var e map[string]any
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, v)
		}
		if e["pod"] != fmt.Sprintf("p%d", i) || e["type"] != "create" || e["reason"] != "new pod" || e["time"] == nil {
			t.Errorf("event %d: %s", i, v)
		}
	}
	ttl := timeToLive(t, cli, lease)
	if ttl.GrantedTTL != int64(reporter.EventTTL.Seconds()) || ttl.TTL < int64((reporter.EventTTL-time.Minute).Seconds()) {
		t.Errorf("event lease: granted %d s, left %d s; want 48 h", ttl.GrantedTTL, ttl.TTL)
	}
}

// TestStatusFollowsDocument: the status key is rewritten when the document
// changes (after Trigger) and holds the document as JSON.
func TestStatusFollowsDocument(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	d := &doc{}
	d.set("web")
	statusKey, _, _ := reporter.Keys("/p", "h1")
	r := reporter.New(cli, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Hour, Document: d.get, Events: eventlog.NewLog(10)}, quiet())
	defer running(t, r)()
	pods := func() string {
		resp := get(t, cli, statusKey)
		if len(resp.Kvs) == 0 {
			return ""
		}
		var m struct{ Pods []string }
		if err := json.Unmarshal(resp.Kvs[0].Value, &m); err != nil {
			t.Fatalf("status key: %v", err)
		}
		return strings.Join(m.Pods, ",")
	}
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) { p := pods(); return p == "web", "pods " + p })
	// The interval is an hour: only the trigger can bring the change.
	d.set("web", "api")
	r.Trigger()
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) { p := pods(); return p == "web,api", "pods " + p })
}

// TestEtcdDownNeverBlocks: with etcd down, Trigger and recording events
// return at once (the reporter works on its own goroutine); once etcd is
// back, the status key shows the latest document and the events recorded
// during the outage arrive.
func TestEtcdDownNeverBlocks(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	d := &doc{}
	d.set("web")
	ev := eventlog.NewLog(100)
	statusKey, aliveKey, prefix := reporter.Keys("/p", "h1")
	r := reporter.New(cli, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Second, Document: d.get, Events: ev}, quiet())
	defer running(t, r)()
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) { return len(get(t, cli, statusKey).Kvs) == 1, "no status key" })

	srv.Stop()
	start := time.Now()
	for i := range 50 {
		r.Trigger()
		ev.Record(eventlog.Event{Type: eventlog.Restart, Pod: "web", Reason: fmt.Sprintf("outage %d", i)})
	}
	d.set("web", "late")
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("50 triggers and events with etcd down took %s", took)
	}
	srv.Restart()
	testkit.WaitFor(t, 45*time.Second, func() (bool, string) {
		resp := get(t, cli, statusKey)
		return len(resp.Kvs) == 1 && strings.Contains(string(resp.Kvs[0].Value), "late"), "status key without the change made during the outage"
	})
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		return len(get(t, cli, aliveKey).Kvs) == 1, "no liveness key after etcd returned"
	})
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		n := len(get(t, cli, prefix, clientv3.WithPrefix()).Kvs)
		return n == 50, fmt.Sprintf("%d of the 50 events recorded during the outage in etcd", n)
	})
}

// TestEventsDuringLongOutage: while etcd is down the reporter's writes
// time out one after another; events recorded meanwhile (a crash-looping
// pod makes many) wait in memory, the newest 1000 of them, and reach etcd
// when it returns.
func TestEventsDuringLongOutage(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ev := eventlog.NewLog(1000)
	statusKey, _, prefix := reporter.Keys("/p", "h1")
	run(t, cli, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Second, Document: (&doc{}).get, Events: ev})
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) { return len(get(t, cli, statusKey).Kvs) == 1, "no status key" })

	srv.Stop()
	const n, kept = 1200, 1000
	for i := range n {
		ev.Record(eventlog.Event{Type: eventlog.Restart, Pod: "web", Reason: fmt.Sprintf("crash %d", i)})
	}
	srv.Restart()
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		seen := map[string]bool{}
		for _, kv := range get(t, cli, prefix, clientv3.WithPrefix()).Kvs {
			var e eventlog.Event
			if err := json.Unmarshal(kv.Value, &e); err != nil {
				t.Fatalf("event %s: %v", kv.Key, err)
			}
			seen[e.Reason] = true
		}
		for i := n - kept; i < n; i++ {
			if !seen[fmt.Sprintf("crash %d", i)] {
				return false, fmt.Sprintf("%d events in etcd; crash %d (of the newest %d recorded during the outage) missing", len(seen), i, kept)
			}
		}
		return true, ""
	})
}

// TestReportOnce: one status write and every buffered event; no liveness
// key (a one-shot run is not a live host).
func TestReportOnce(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	ev := eventlog.NewLog(10)
	ev.Record(eventlog.Event{Type: eventlog.Create, Pod: "web"})
	ev.Record(eventlog.Event{Type: eventlog.Start, Pod: "web"})
	statusKey, aliveKey, prefix := reporter.Keys("/p", "h1")
	d := &doc{}
	d.set("web")
	r := reporter.New(cli, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Second, Document: d.get, Events: ev}, quiet())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := r.ReportOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(get(t, cli, statusKey).Kvs); n != 1 {
		t.Errorf("%d status keys, want 1", n)
	}
	if n := len(get(t, cli, aliveKey).Kvs); n != 0 {
		t.Errorf("ReportOnce wrote the liveness key")
	}
	if n := len(get(t, cli, prefix, clientv3.WithPrefix()).Kvs); n != 2 {
		t.Errorf("%d events in etcd, want 2", n)
	}

	srv.Stop()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	if err := r.ReportOnce(ctx2); err == nil {
		t.Error("ReportOnce with etcd down returned no error")
	}
}

// TestUnchangedStatusRewrittenOnTheClock: an unchanged status is written
// again once Interval has passed on the reporter's clock, and the liveness
// key holds the clock's time. The clock is a fake moved by hand: the test
// waits for etcd, never for the interval.
func TestUnchangedStatusRewrittenOnTheClock(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewFake(t0)
	statusKey, aliveKey, _ := reporter.Keys("/p", "h1")
	run(t, cli, reporter.Options{Prefix: "/p", Hostname: "h1", Interval: time.Hour, Document: (&doc{}).get, Events: eventlog.NewLog(10), Clock: clk})
	var rev int64
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		r := get(t, cli, statusKey)
		if len(r.Kvs) == 0 {
			return false, "no status key"
		}
		rev = r.Kvs[0].ModRevision
		return true, ""
	})
	if r := get(t, cli, aliveKey); len(r.Kvs) != 1 || string(r.Kvs[0].Value) != t0.Format(time.RFC3339) {
		t.Errorf("liveness key %v, want the clock's time %s", r.Kvs, t0.Format(time.RFC3339))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := clk.WaitForTimers(ctx, 1); err != nil {
		t.Fatalf("the reporter set no ticker: %v", err)
	}
	clk.Advance(time.Hour)
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		r := get(t, cli, statusKey)
		return len(r.Kvs) == 1 && r.Kvs[0].ModRevision > rev, "the unchanged status was not written again after an interval on the clock"
	})
}

// running runs r until the returned stop is called (or the test ends);
// stop waits for Run to return.
func running(t *testing.T, r *reporter.Reporter) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	var once gosync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Error("reporter.Run did not return within 20s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// TestStopMidReportRevokesTheLease: a stop that lands while a report is
// in flight (its keep-alive cut short by the cancel) still revokes the
// liveness lease. At a 1 ms interval the reporter is always mid-report.
func TestStopMidReportRevokesTheLease(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	for i := range 20 {
		host := fmt.Sprintf("busy-%d", i)
		_, aliveKey, _ := reporter.Keys("/p", host)
		d := &doc{}
		stop := run(t, cli, reporter.Options{Prefix: "/p", Hostname: host, Interval: time.Millisecond, Document: d.get, Events: eventlog.NewLog(10)})
		// Kept alive at least once: the next report is a keep-alive.
		lease := aliveLease(t, cli, aliveKey, func(lease int64) (bool, string) {
			return timeToLive(t, cli, lease).TTL < 10, "liveness lease not yet kept alive"
		})
		stop()
		if r := get(t, cli, aliveKey); len(r.Kvs) != 0 {
			t.Fatalf("stop %d: liveness key still there after the reporter stopped mid-report", i)
		}
		if r := timeToLive(t, cli, lease); r.TTL != -1 {
			t.Fatalf("stop %d: liveness lease left %d s after the reporter stopped mid-report, want revoked (-1)", i, r.TTL)
		}
	}
}
