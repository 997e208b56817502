package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
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
// next revision; a broken or compacted watch, or etcd not answering the
// check made every interval while the watch is quiet, is answered with a
// fresh Get.
type Etcd struct {
	cfg    config.Source
	kv     EtcdKV
	log    *slog.Logger
	prefix bool
	clock  clock.Clock
	// published: the key holds a set `hostlet publish` wrote (a git source
	// with via: etcd), not manifests; its revision is the release's.
	published bool
	// compose renders the Compose files the source holds.
	compose *project.Renderer
}

// WithCompose sets the renderer of the Compose files the source holds
// (nil: such a value is an error) and returns it; call it before Run.
func (e *Etcd) WithCompose(r *project.Renderer) *Etcd {
	e.compose = r
	return e
}

// NewEtcd returns the etcd source for cfg, reading through kv.
func NewEtcd(cfg config.Source, kv EtcdKV, log *slog.Logger) *Etcd {
	return &Etcd{cfg: cfg, kv: kv, log: log.With("source", cfg.Name), prefix: strings.HasSuffix(cfg.Key, "/"), clock: clock.Real{}}
}

// WithClock makes the source time its reads, retries and liveness checks
// on c (nil: clock.Real) and returns it; call it before Run. Each etcd
// call's timeout (cfg.Timeout) stays a context deadline.
func (e *Etcd) WithClock(c clock.Clock) *Etcd {
	e.clock = clock.Or(c)
	return e
}

// Name implements Source.
func (e *Etcd) Name() string { return e.cfg.Name }

// Type implements Source: etcd, or git for a git source read through
// etcd (via: etcd).
func (e *Etcd) Type() string {
	if e.published {
		return config.TypeGit
	}
	return config.TypeEtcd
}

// NewPublished returns the source of a git source with via: etcd: it
// watches key (fleet.DesiredKey of the host and the source) as an etcd
// source watches its key, and takes the value as `hostlet publish` wrote
// it (fleet.DecodePublished). Its revision is the release's git commit.
func NewPublished(cfg config.Source, kv EtcdKV, key string, log *slog.Logger) *Etcd {
	cfg.Key = key
	e := NewEtcd(cfg, kv, log)
	e.prefix, e.published = false, true
	return e
}

// Read implements Source: one Get, for `hostlet validate` and `hostlet
// diff`.
func (e *Etcd) Read(ctx context.Context) (manifest.Snapshot, error) {
	if e.kv == nil {
		return manifest.Snapshot{Name: e.cfg.Name, Type: config.TypeEtcd}, fmt.Errorf("source %s: no etcd client (etcd.endpoints)", e.cfg.Name)
	}
	snap, _, err := e.read(ctx)
	return snap, err
}

// defaultLiveness is how often a quiet watch checks that etcd answers when
// the source has no interval.
const defaultLiveness = 10 * time.Second

// Run implements Source.
//
// A set is sent when its content changed (or after an error). Its revision
// is the newest mod revision of its keys; when a key was deleted and no
// newer key was written, that revision has not moved, so the set is named
// by the store revision it was read at instead.
//
// While the watch is quiet, etcd is asked every interval whether it still
// answers: a client's watch waits silently through an outage, and an
// outage must show as the source's error.
func (e *Etcd) Run(ctx context.Context, out chan<- Update) {
	const minBackoff, maxBackoff = 200 * time.Millisecond, 10 * time.Second
	backoff := minBackoff
	var (
		lastErr string
		lastSig string // content of the last set sent
		lastRev int64  // its revision
		sent    bool
	)
	for ctx.Err() == nil {
		start := e.clock.Now()
		set, err := e.get(ctx)
		took := e.clock.Since(start)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// Every failure is sent (hostlet_source_errors_total counts
			// failures); the merge takes a repeated error as one.
			lastErr = err.Error()
			if !send(ctx, out, Update{Source: e.cfg.Name, Err: err, Took: took}) {
				return
			}
			if !clock.Sleep(ctx, e.clock, backoff) {
				return
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if !sent || set.sig != lastSig || lastErr != "" {
			rev := lastRev
			switch {
			case !sent || set.modRev > lastRev:
				rev = set.modRev
			case set.sig != lastSig:
				rev = set.storeRev
			}
			lastErr, lastSig, lastRev, sent = "", set.sig, rev, true
			u := Update{Source: e.cfg.Name, Revision: fmt.Sprint(rev), Files: set.snap.Files, Manifests: set.snap.Manifests, Took: took}
			if set.release != "" {
				u.Revision = set.release
			}
			if !send(ctx, out, u) {
				return
			}
		}
		// Watch from the revision after the read; any event means read again.
		e.waitForChange(ctx, set.storeRev+1)
	}
}

// waitForChange returns when something under the key changed, the watch
// broke (etcd restarted, revision compacted), etcd stopped answering, or
// ctx ended.
func (e *Etcd) waitForChange(ctx context.Context, from int64) {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithRev(from)}
	if e.prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	every := e.cfg.Interval
	if every <= 0 {
		every = defaultLiveness
	}
	alive := e.clock.NewTicker(every)
	defer alive.Stop()
	watch := e.kv.Watch(wctx, e.cfg.Key, opts...)
	for {
		select {
		case <-ctx.Done():
			return
		case <-alive.C():
			if err := e.ping(ctx); err != nil {
				e.log.Warn("etcd does not answer while watching; reading again", "error", err)
				return
			}
		case resp, ok := <-watch:
			switch {
			case !ok:
				return
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
}

// ping asks etcd for the number of the source's keys: cheap, and it fails
// within the source's timeout when etcd is unreachable.
func (e *Etcd) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	opts := []clientv3.OpOption{clientv3.WithCountOnly()}
	if e.prefix {
		opts = append(opts, clientv3.WithPrefix())
	}
	_, err := e.kv.Get(pctx, e.cfg.Key, opts...)
	return err
}

// read gets the source's keys once; rev is the store revision of the read.
func (e *Etcd) read(ctx context.Context) (manifest.Snapshot, int64, error) {
	set, err := e.get(ctx)
	if err != nil {
		return set.snap, 0, err
	}
	set.snap.Revision = fmt.Sprint(set.modRev)
	if set.release != "" {
		set.snap.Revision = set.release
	}
	return set.snap, set.storeRev, nil
}

// etcdSet is one read of the source's keys.
type etcdSet struct {
	snap manifest.Snapshot
	// storeRev is the store revision of the read; modRev the newest mod
	// revision among the keys (0 when there are none).
	storeRev, modRev int64
	// sig identifies the content: every key with its mod revision.
	sig string
	// release is the revision a published set names ("" for others).
	release string
}

// MaxEtcdSourceBytes bounds the bytes of the values one read of an etcd
// source takes in, blank ones included: a read past it fails (the source
// keeps its last good set). 64 MiB is six values at the per-value limit
// (manifest.MaxSize), or 5,000 manifests (MaxSourceManifests) of 13 KiB
// each, far over real sets (a pod is ~1 KiB), while the decoding it feeds
// stays a fraction of a host's memory (700 keys of 1 MB took 2.78 GB).
const MaxEtcdSourceBytes = 64 << 20

// etcdPageKeys is how many keys one Get of a prefix returns: a page holds
// at most that many values (16 × etcd's default 1.5 MiB request limit =
// 24 MiB), whatever the prefix holds.
const etcdPageKeys = 16

func (e *Etcd) get(ctx context.Context) (etcdSet, error) {
	set := etcdSet{snap: manifest.Snapshot{Name: e.cfg.Name, Type: config.TypeEtcd}}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	h := sha256.New()
	keys, size := 0, 0
	rev, err := e.pages(rctx, func(kv *mvccpb.KeyValue) error {
		// Every key counts, blank or not, as it arrives.
		if keys++; keys > manifest.MaxSourceManifests {
			return fmt.Errorf("etcd source %s: more than %d keys under %s: %w; split it into several sources", e.cfg.Name, manifest.MaxSourceManifests, e.cfg.Key, manifest.ErrTooManyManifests)
		}
		if size += len(kv.Value); size > MaxEtcdSourceBytes {
			return fmt.Errorf("etcd source %s: the values under %s are %w of %d bytes in all", e.cfg.Name, e.cfg.Key, manifest.ErrTooLarge, MaxEtcdSourceBytes)
		}
		return e.take(ctx, &set, h, kv)
	})
	if err != nil {
		return set, err
	}
	if set.snap.Manifests, err = project.TranslateKube(ctx, e.compose, e.cfg.Name, set.snap.Manifests, nil); err != nil {
		return set, err
	}
	set.storeRev, set.sig = rev, hex.EncodeToString(h.Sum(nil))
	return set, nil
}

// take adds one key's manifests to set, and the key to the content
// signature h.
func (e *Etcd) take(ctx context.Context, set *etcdSet, h io.Writer, kv *mvccpb.KeyValue) error {
	if int64(len(kv.Value)) > manifest.MaxSize {
		return fmt.Errorf("etcd key %s: %d bytes: %w of %d bytes", kv.Key, len(kv.Value), manifest.ErrTooLarge, manifest.MaxSize)
	}
	fmt.Fprintf(h, "%s\x00%d\x00", kv.Key, kv.ModRevision)
	set.modRev = max(set.modRev, kv.ModRevision)
	if len(strings.TrimSpace(string(kv.Value))) == 0 {
		return nil
	}
	if e.published {
		p, err := fleet.DecodePublished(kv.Value, e.cfg.Name)
		if err != nil {
			return fmt.Errorf("etcd key %s: %w", kv.Key, err)
		}
		set.snap.Files, set.snap.Manifests, set.release = p.Files, p.Manifests, p.Release
		return nil
	}
	ms, err := decodeBody(ctx, kv.Value, manifest.Origin{Source: e.cfg.Name, File: string(kv.Key)}, e.compose)
	if err != nil {
		return err
	}
	set.snap.Files++
	set.snap.Manifests = append(set.snap.Manifests, ms...)
	if len(set.snap.Manifests) > manifest.MaxSourceManifests {
		return manifest.TooManyInSource(manifest.Origin{Source: e.cfg.Name, File: string(kv.Key)})
	}
	return nil
}

// pages calls fn with the source's key, or every key under its prefix in
// key order a page at a time, all read at the first page's revision (one
// moment of the store), until fn fails. It returns that revision.
func (e *Etcd) pages(ctx context.Context, fn func(*mvccpb.KeyValue) error) (int64, error) {
	var rev int64
	from, end := e.cfg.Key, ""
	if e.prefix {
		end = clientv3.GetPrefixRangeEnd(e.cfg.Key)
	}
	for {
		var opts []clientv3.OpOption
		if e.prefix {
			opts = []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(etcdPageKeys), clientv3.WithRev(rev),
				clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		}
		resp, err := e.kv.Get(ctx, from, opts...)
		if err != nil {
			return 0, fmt.Errorf("etcd get %s: %w", e.cfg.Key, err)
		}
		if rev == 0 && resp.Header != nil {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if err := fn(kv); err != nil {
				return 0, err
			}
		}
		if !e.prefix || !resp.More || len(resp.Kvs) == 0 {
			return rev, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
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
