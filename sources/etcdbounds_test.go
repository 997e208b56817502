package sources

import (
	"context"
	"errors"
	"fmt"
	"strings"
	gosync "sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/manifest"
)

// pageKV records the most keys one Get of it returned.
type pageKV struct {
	EtcdKV
	mu      gosync.Mutex
	maxKeys int
}

func (p *pageKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp, err := p.EtcdKV.Get(ctx, key, opts...)
	if err == nil {
		p.mu.Lock()
		p.maxKeys = max(p.maxKeys, len(resp.Kvs))
		p.mu.Unlock()
	}
	return resp, err
}

// putMany puts n keys prefix/NNNNN holding value, up to 100 (and 1 MiB)
// to a transaction.
func putMany(t *testing.T, cli *clientv3.Client, prefix string, n int, value string) {
	t.Helper()
	batch := max(1, min(100, (1<<20)/max(len(value), 1)))
	for i := 0; i < n; i += batch {
		var ops []clientv3.Op
		for j := i; j < min(i+batch, n); j++ {
			ops = append(ops, clientv3.OpPut(fmt.Sprintf("%s%05d", prefix, j), value))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := cli.Txn(ctx).Then(ops...).Commit()
		cancel()
		if err != nil {
			t.Fatalf("put keys %d..: %v", i, err)
		}
	}
}

// TestEtcdPrefixReadIsPagedAndBounded (issue 30 attack, finding 2): an
// etcd source read its whole prefix in one Get, and keys of blank values
// counted toward nothing (700 keys of 1 MB of spaces: 31 s and 2.78 GB).
// A prefix is read in pages, every key counts toward
// manifest.MaxSourceManifests and every value's bytes toward
// MaxEtcdSourceBytes; past either, the read fails naming the source and
// the bound (the merger keeps the last good set). Under the bounds every
// key of every page is read.
func TestEtcdPrefixReadIsPagedAndBounded(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	read := func(prefix string) (manifest.Snapshot, *pageKV, error) {
		kv := &pageKV{EtcdKV: cli}
		e := NewEtcd(config.Source{Name: "registry", Type: config.TypeEtcd, Key: prefix, Timeout: 5 * time.Minute}, kv, testLogger(t))
		snap, err := e.Read(context.Background())
		return snap, kv, err
	}

	t.Run("pages", func(t *testing.T) {
		putMany(t, cli, "/paged/", 150, podYAML("p", "1"))
		snap, kv, err := read("/paged/")
		if err != nil || len(snap.Manifests) != 150 {
			t.Fatalf("read: %d manifests, error %v; want 150", len(snap.Manifests), err)
		}
		if kv.maxKeys > etcdPageKeys {
			t.Errorf("a Get returned %d keys, want pages of at most %d", kv.maxKeys, etcdPageKeys)
		}
	})
	t.Run("blank keys count", func(t *testing.T) {
		putMany(t, cli, "/blank/", manifest.MaxSourceManifests+1, " ")
		_, _, err := read("/blank/")
		if !errors.Is(err, manifest.ErrTooManyManifests) || !strings.Contains(err.Error(), "registry") || !strings.Contains(err.Error(), fmt.Sprint(manifest.MaxSourceManifests)) {
			t.Fatalf("read error %v, want ErrTooManyManifests naming the source and the bound", err)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		value := strings.Repeat(" ", 1<<20)
		n := MaxEtcdSourceBytes/len(value) + 1
		putMany(t, cli, "/large/", n, value)
		_, _, err := read("/large/")
		if !errors.Is(err, manifest.ErrTooLarge) || !strings.Contains(err.Error(), "registry") || !strings.Contains(err.Error(), fmt.Sprint(MaxEtcdSourceBytes)) {
			t.Fatalf("read error %v, want ErrTooLarge naming the source and the bound", err)
		}
	})
}
