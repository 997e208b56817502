package release

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/fleet"
)

// Etcd is what the engine uses of an etcd client (a *clientv3.Client is
// one): reads, guarded transactions and a watch of the hosts' status keys.
type Etcd interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
	Txn(ctx context.Context) clientv3.Txn
	Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan
}

// Limits of one etcd transaction: embedded and default etcd refuse more
// than 128 operations (--max-txn-ops) or 1.5 MiB (--max-request-bytes).
// A wave's puts are split at maxTxnBytes; one host's set over
// maxValueBytes is refused before anything is written.
const (
	maxTxnOps     = 128
	maxTxnBytes   = 1 << 20
	maxValueBytes = 3<<19 - 64<<10
)

// publishTries bounds the tries of one transaction that etcd did not
// answer (a leader election after a member was lost).
const publishTries = 5

// compare reads what etcd holds for each of h's sources and records
// which differ from h's sets (Changed) and the keys' mod revisions. Sets
// compare decoded, release included: every host of a new commit is
// written, even when its manifests are the same (so that every host
// reports the latest release); the same commit again writes nothing.
func (p *Publisher) compare(ctx context.Context, h *Host) error {
	for i, s := range h.Sets {
		key := h.key(p.Prefix, s.Source)
		rctx, cancel := context.WithTimeout(ctx, p.requestTimeout())
		resp, err := p.Etcd.Get(rctx, key)
		cancel()
		if err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
		if len(resp.Kvs) == 1 {
			h.modRevs[key] = resp.Kvs[0].ModRevision
			if sameSet(resp.Kvs[0].Value, h.enc[i], s.Source) {
				continue
			}
		}
		h.Changed = append(h.Changed, s.Source)
	}
	return nil
}

// sameSet reports whether two encoded published sets are the same
// release of the same set: both decoded and encoded again as JSON (gzip
// output may differ between Go versions for the same content).
func sameSet(old, new []byte, source string) bool {
	canon := func(b []byte) []byte {
		p, err := fleet.DecodePublished(b, source)
		if err != nil {
			return nil
		}
		j, err := json.Marshal(p)
		if err != nil {
			return nil
		}
		return j
	}
	a, b := canon(old), canon(new)
	return a != nil && bytes.Equal(a, b)
}

// writeWave writes a wave's puts, each guarded by its compare (the key
// as read), and the release record, in one transaction, or in as few as
// etcd's limits allow (the record in the last): it returns how many. A
// failed compare is an error: another publish wrote meanwhile.
func (p *Publisher) writeWave(ctx context.Context, cmps []clientv3.Cmp, puts []clientv3.Op, record clientv3.Op) (int, error) {
	chunks := splitTxns(cmps, puts, record)
	for i, c := range chunks {
		if err := p.commit(ctx, c.cmps, c.puts); err != nil {
			return i, err
		}
	}
	return len(chunks), nil
}

// txn is one transaction of a wave: its compares and puts.
type txn struct {
	cmps []clientv3.Cmp
	puts []clientv3.Op
}

// splitTxns splits a wave's guarded puts and its record into the fewest
// transactions etcd's limits allow, the record in the last.
func splitTxns(cmps []clientv3.Cmp, puts []clientv3.Op, record clientv3.Op) []txn {
	var chunks []txn
	cur, size := txn{}, 0
	for i, p := range puts {
		n := len(p.KeyBytes()) + len(p.ValueBytes())
		if len(cur.puts) > 0 && (len(cur.puts)+1 >= maxTxnOps || size+n > maxTxnBytes) {
			chunks = append(chunks, cur)
			cur, size = txn{}, 0
		}
		cur.cmps, cur.puts, size = append(cur.cmps, cmps[i]), append(cur.puts, p), size+n
	}
	// The record goes with the last puts when it fits, else on its own:
	// it grows with the fleet (every host's name).
	if n := len(record.KeyBytes()) + len(record.ValueBytes()); len(cur.puts)+1 < maxTxnOps && size+n <= maxTxnBytes {
		cur.puts = append(cur.puts, record)
		return append(chunks, cur)
	}
	return append(chunks, cur, txn{puts: []clientv3.Op{record}})
}

// commit commits one transaction of a wave. A try etcd did not answer
// may have been applied: the next try, whose compares then fail, reads
// the keys back, and their holding exactly what was written counts as
// done.
func (p *Publisher) commit(ctx context.Context, cmps []clientv3.Cmp, puts []clientv3.Op) error {
	unanswered := false
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(ctx, p.requestTimeout())
		resp, err := p.Etcd.Txn(tctx).If(cmps...).Then(puts...).Commit()
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && try < publishTries:
			unanswered = true
			if !clock.Sleep(ctx, p.clock(), time.Duration(try)*time.Second) {
				return ctx.Err()
			}
			continue
		case err != nil:
			return err
		case resp.Succeeded:
			return nil
		case unanswered && p.holds(ctx, puts):
			return nil
		}
		return errors.New("a host's key changed since it was read (another publish at the same time?); publish again")
	}
}

// holds reports whether every key of puts holds the value put.
func (p *Publisher) holds(ctx context.Context, puts []clientv3.Op) bool {
	for _, op := range puts {
		tctx, cancel := context.WithTimeout(ctx, p.requestTimeout())
		resp, err := p.Etcd.Get(tctx, string(op.KeyBytes()))
		cancel()
		if err != nil || len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, op.ValueBytes()) {
			return false
		}
	}
	return true
}

func releaseOp(prefix string, rec fleet.Release) clientv3.Op {
	b, _ := json.Marshal(rec) // plain strings and times: never fails
	return clientv3.OpPut(fleet.ReleaseKey(prefix, rec.Rev), string(b))
}

// getRelease reads the record of release rev; nil when there is none.
func (p *Publisher) getRelease(ctx context.Context, rev string) (*fleet.Release, error) {
	key := fleet.ReleaseKey(p.Prefix, rev)
	rctx, cancel := context.WithTimeout(ctx, p.requestTimeout())
	defer cancel()
	resp, err := p.Etcd.Get(rctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var rec fleet.Release
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, fmt.Errorf("release record %s: %w", key, err)
	}
	return &rec, nil
}

func (p *Publisher) putRelease(ctx context.Context, rec fleet.Release) error {
	return p.commit(ctx, nil, []clientv3.Op{releaseOp(p.Prefix, rec)})
}
