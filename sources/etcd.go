package sources

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
)

// EtcdKV is what the etcd source needs of a client (clientv3.Client
// satisfies it).
type EtcdKV interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
}

// Etcd reads manifests from etcd: one key holding a list (the seed's
// layout) or, when the key ends with "/", every key under that prefix, each
// holding one or more manifests. It reads with Get, then watches from the
// next revision; a broken or compacted watch is answered with a fresh Get.
type Etcd struct {
	cfg    config.Source
	kv     EtcdKV
	log    *slog.Logger
	prefix bool
}

// NewEtcd returns the etcd source for cfg, reading through kv.
func NewEtcd(cfg config.Source, kv EtcdKV, log *slog.Logger) *Etcd {
	return &Etcd{cfg: cfg, kv: kv, log: log.With("source", cfg.Name), prefix: strings.HasSuffix(cfg.Key, "/")}
}

// Name implements Source.
func (e *Etcd) Name() string { return e.cfg.Name }

// Type implements Source.
func (e *Etcd) Type() string { return config.TypeEtcd }

// Run implements Source.
func (e *Etcd) Run(ctx context.Context, out chan<- Update) {
	const minBackoff, maxBackoff = 200 * time.Millisecond, 10 * time.Second
	backoff := minBackoff
	lastErr, lastRev := "", ""
	for ctx.Err() == nil {
		start := time.Now()
		snap, rev, err := e.read(ctx)
		took := time.Since(start)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if err.Error() != lastErr {
				lastErr = err.Error()
				if !send(ctx, out, Update{Source: e.cfg.Name, Err: err, Took: took}) {
					return
				}
			}
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if snap.Revision != lastRev || lastErr != "" {
			lastErr, lastRev = "", snap.Revision
			if !send(ctx, out, Update{Source: e.cfg.Name, Revision: snap.Revision, Files: snap.Files, Manifests: snap.Manifests, Took: took}) {
				return
			}
		}
		// Watch from the revision after the read; any event means read again.
		e.waitForChange(ctx, rev+1)
	}
}

// waitForChange returns when something under the key changed, the watch
// broke (etcd restarted, revision compacted) or ctx ended.
func (e *Etcd) waitForChange(ctx context.Context, from int64) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRev(from)}
	if e.prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	for resp := range e.kv.Watch(wctx, e.cfg.Key, opts...) {
		switch {
		case resp.CompactRevision != 0:
			e.log.Info("watch revision compacted; reading again", "compactRevision", resp.CompactRevision)
			return
		case resp.Canceled || resp.Err() != nil:
			e.log.Warn("etcd watch ended; reading again", "error", resp.Err())
			return
		case len(resp.Events) > 0:
			return
		}
	}
}

// read gets the source's keys once; rev is the store revision of the read.
func (e *Etcd) read(ctx context.Context) (Snapshot, int64, error) {
	snap := Snapshot{Source: e.cfg.Name, Type: config.TypeEtcd}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	var opts []clientv3.OpOption
	if e.prefix {
		opts = append(opts, clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	}
	resp, err := e.kv.Get(rctx, e.cfg.Key, opts...)
	if err != nil {
		return snap, 0, fmt.Errorf("etcd get %s: %w", e.cfg.Key, err)
	}
	var maxMod int64
	for _, kv := range resp.Kvs {
		if int64(len(kv.Value)) > manifest.MaxSize {
			return snap, 0, fmt.Errorf("etcd key %s: %d bytes: %w of %d bytes", kv.Key, len(kv.Value), manifest.ErrTooLarge, manifest.MaxSize)
		}
		maxMod = max(maxMod, kv.ModRevision)
		if len(strings.TrimSpace(string(kv.Value))) == 0 {
			continue
		}
		ms, err := manifest.Decode(kv.Value, manifest.Origin{Source: e.cfg.Name, File: string(kv.Key)})
		if err != nil {
			return snap, 0, err
		}
		snap.Files++
		snap.Manifests = append(snap.Manifests, ms...)
	}
	snap.Revision = fmt.Sprintf("%d", maxMod)
	if len(resp.Kvs) == 0 {
		snap.Revision = "0"
	}
	return snap, resp.Header.Revision, nil
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// DialEtcd returns a client for the endpoints. It does not wait for a
// connection: reads fail, and are retried, while etcd is down.
func DialEtcd(endpoints []string) (*clientv3.Client, error) {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 5 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}
