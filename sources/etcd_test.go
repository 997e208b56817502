package sources

import (
	"context"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
)

func etcdSource(t *testing.T, kv EtcdKV, key string) *Etcd {
	// Interval is how often a quiet watch checks that etcd still answers.
	return NewEtcd(config.Source{Name: "registry", Type: config.TypeEtcd, Key: key, Timeout: time.Second, Interval: 500 * time.Millisecond}, kv, testLogger(t))
}

func del(t *testing.T, cli *clientv3.Client, key string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Delete(ctx, key)
	if err != nil {
		t.Fatalf("delete %s: %v", key, err)
	}
	return resp.Header.Revision
}

// TestEtcdDeliversAndWatches: both layouts deliver the set with the mod
// revision of the newest key, and every change (put, new key, delete) is
// seen through the watch.
func TestEtcdDeliversAndWatches(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	rev := func(r int64) string { return fmt.Sprint(r) }

	type step struct {
		name string
		do   func() int64 // returns the revision the source must show
		want []string
	}
	tests := []struct {
		name  string
		key   string
		steps func(key string) []step
	}{
		{
			name: "one key holding a list",
			key:  "/registry/hosts/h1/kubelet",
			steps: func(key string) []step {
				return []step{
					{"first list", func() int64 { return etcdtest.Put(t, cli, key, podListYAML("1", "web", "api")) }, []string{"web=1", "api=1"}},
					{"new list", func() int64 { return etcdtest.Put(t, cli, key, podListYAML("2", "api", "db")) }, []string{"api=2", "db=2"}},
					{"a key elsewhere changes nothing", func() int64 {
						etcdtest.Put(t, cli, key+"-other", podListYAML("9", "zzz"))
						return 0
					}, []string{"api=2", "db=2"}},
					{"key deleted", func() int64 { del(t, cli, key); return -1 }, nil},
				}
			},
		},
		{
			name: "prefix with one or more manifests per key",
			key:  "/hostlet/manifests/h1/",
			steps: func(key string) []step {
				var last int64
				return []step{
					{"two keys", func() int64 {
						etcdtest.Put(t, cli, key+"a", podYAML("alpha", "1"))
						last = etcdtest.Put(t, cli, key+"b", podListYAML("1", "beta", "gamma"))
						// Not under the prefix "h1/".
						etcdtest.Put(t, cli, "/hostlet/manifests/h10/x", podYAML("other", "1"))
						return last
					}, []string{"alpha=1", "beta=1", "gamma=1"}},
					{"new key", func() int64 { last = etcdtest.Put(t, cli, key+"c", podYAML("delta", "1")); return last }, []string{"alpha=1", "beta=1", "gamma=1", "delta=1"}},
					{"older key deleted", func() int64 { del(t, cli, key+"a"); return -1 }, []string{"beta=1", "gamma=1", "delta=1"}},
					{"key changed", func() int64 { return etcdtest.Put(t, cli, key+"b", podYAML("beta", "2")) }, []string{"beta=2", "delta=1"}},
					{"empty value counts as no manifest", func() int64 { return etcdtest.Put(t, cli, key+"c", "") }, []string{"beta=2"}},
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := tt.steps(tt.key)
			wantRev := steps[0].do()
			h := startSources(t, MergeOptions{AllowEmpty: true}, etcdSource(t, srv.Client(t), tt.key))
			h.waitSet(t, 10*time.Second, steps[0].want, rev(wantRev))
			prev := h.m.State().Sources[0].Revision
			for _, s := range steps[1:] {
				r := s.do()
				want := rev(r)
				switch r {
				case 0:
					want = prev // no change under the key
				case -1:
					want = "" // a deletion: any new revision
				}
				st := h.waitSet(t, 5*time.Second, s.want, want)
				if r == -1 && st.Sources[0].Revision == prev {
					t.Errorf("%s: revision stayed %s although the set changed", s.name, prev)
				}
				prev = st.Sources[0].Revision
			}
		})
	}
}

// TestEtcdStoppedAndRestarted: while etcd is down the source reports the
// error and keeps its set; after etcd restarts (same data, same ports) it
// recovers and sees a new write.
func TestEtcdStoppedAndRestarted(t *testing.T) {
	srv := etcdtest.Start(t)
	writer := srv.Client(t)
	key := "/registry/hosts/h1/kubelet"
	r1 := etcdtest.Put(t, writer, key, podListYAML("1", "web", "api"))
	h := startSources(t, MergeOptions{}, etcdSource(t, srv.Client(t), key))
	want := []string{"web=1", "api=1"}
	h.waitSet(t, 10*time.Second, want, fmt.Sprint(r1))

	srv.Stop()
	start := time.Now()
	st := h.waitErr(t, 15*time.Second, 0, "")
	t.Logf("error %s after etcd stopped: %s", time.Since(start).Round(time.Millisecond), st.Sources[0].Error)
	sameSet(t, st, want, fmt.Sprint(r1))

	srv.Restart()
	start = time.Now()
	h.waitSet(t, 30*time.Second, want, fmt.Sprint(r1))
	t.Logf("recovered %s after etcd restarted", time.Since(start).Round(time.Millisecond))
	r2 := etcdtest.Put(t, writer, key, podListYAML("2", "web"))
	h.waitSet(t, 10*time.Second, []string{"web=2"}, fmt.Sprint(r2))
}

// gatedKV holds the first watch until gate is closed, so that the test can
// compact past the revision the watch asks for; it records what happened.
type gatedKV struct {
	*clientv3.Client
	gate      chan struct{}
	asked     chan int64
	gated     atomic.Bool
	compacted atomic.Int64
	wg        gosync.WaitGroup
}

func (g *gatedKV) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	if !g.gated.CompareAndSwap(false, true) {
		return g.Client.Watch(ctx, key, opts...)
	}
	g.asked <- clientv3.OpGet(key, opts...).Rev()
	out := make(chan clientv3.WatchResponse)
	g.wg.Go(func() {
		defer close(out)
		select {
		case <-g.gate:
		case <-ctx.Done():
			return
		}
		for resp := range g.Client.Watch(ctx, key, opts...) {
			if resp.CompactRevision != 0 {
				g.compacted.Store(resp.CompactRevision)
			}
			select {
			case out <- resp:
			case <-ctx.Done():
				return
			}
		}
	})
	return out
}

// TestEtcdCompactedWatchRevision: the watch asks for a revision compacted
// away meanwhile; the source answers with a fresh Get and delivers the
// newest set.
func TestEtcdCompactedWatchRevision(t *testing.T) {
	srv := etcdtest.Start(t)
	writer := srv.Client(t)
	key := "/hostlet/manifests/h1/"
	r1 := etcdtest.Put(t, writer, key+"web", podYAML("web", "1"))
	kv := &gatedKV{Client: srv.Client(t), gate: make(chan struct{}), asked: make(chan int64, 1)}
	t.Cleanup(kv.wg.Wait)
	h := startSources(t, MergeOptions{}, etcdSource(t, kv, key))
	h.waitSet(t, 10*time.Second, []string{"web=1"}, fmt.Sprint(r1))

	var from int64
	select {
	case from = <-kv.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the source never started its watch")
	}
	var last int64
	for v := 2; v <= 5; v++ {
		last = etcdtest.Put(t, writer, key+"web", podYAML("web", fmt.Sprint(v)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := writer.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	if from >= last {
		t.Fatalf("watch from %d is not below the compaction at %d", from, last)
	}
	close(kv.gate)
	h.waitSet(t, 10*time.Second, []string{"web=5"}, fmt.Sprint(last))
	if got := kv.compacted.Load(); got != last {
		t.Errorf("the watch from %d saw compact revision %d, want %d", from, got, last)
	}
}
