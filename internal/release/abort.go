package release

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/fleet"
)

// Abort is a halted release to take back, and the release to publish
// again instead: the last complete one before it.
type Abort struct {
	Cur, Prev fleet.Release
}

// FindAbort finds the release whose commit starts with rev, which must be
// halted or waiting, and the last complete release before it.
func (p *Publisher) FindAbort(ctx context.Context, rev string) (*Abort, error) {
	records, err := p.releases(ctx)
	if err != nil {
		return nil, p.etcdError(err)
	}
	var cur *fleet.Release
	for i, rec := range records {
		if strings.HasPrefix(rec.Rev, rev) {
			if cur != nil {
				return nil, fmt.Errorf("--abort %s: more than one release starts so (%s, %s): give more of the SHA", rev, ShortRev(cur.Rev), ShortRev(rec.Rev))
			}
			cur = &records[i]
		}
	}
	if cur == nil {
		return nil, fmt.Errorf("--abort %s: no release record at %s", rev, fleet.ReleaseKey(p.Prefix, rev))
	}
	if cur.State == fleet.StateComplete || cur.State == fleet.StateAborted {
		return nil, fmt.Errorf("--abort %s: release %s is %s; publish the commit to go back to", rev, ShortRev(cur.Rev), cur.State)
	}
	var prev *fleet.Release
	for i, rec := range records {
		if rec.Rev != cur.Rev && rec.State == fleet.StateComplete && rec.Time.Before(cur.Time) && (prev == nil || rec.Time.After(prev.Time)) {
			prev = &records[i]
		}
	}
	if prev == nil {
		return nil, fmt.Errorf("--abort %s: no complete release before %s to go back to", rev, ShortRev(cur.Rev))
	}
	return &Abort{Cur: *cur, Prev: *prev}, nil
}

// releases reads every release record (those that do not decode, or name
// no commit, left out).
func (p *Publisher) releases(ctx context.Context) ([]fleet.Release, error) {
	rctx, cancel := context.WithTimeout(ctx, p.requestTimeout())
	resp, err := p.Etcd.Get(rctx, fleet.ReleaseKey(p.Prefix, "")+"/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		return nil, err
	}
	var records []fleet.Release
	for _, kv := range resp.Kvs {
		var rec fleet.Release
		if json.Unmarshal(kv.Value, &rec) != nil || rec.Rev == "" {
			continue
		}
		records = append(records, rec)
	}
	return records, nil
}

// MarkAborted marks a's release Aborted, once its previous release was
// published again.
func (p *Publisher) MarkAborted(ctx context.Context, a *Abort) error {
	cur := a.Cur
	cur.State, cur.Reason, cur.Updated = fleet.StateAborted, fmt.Sprintf("aborted: %s published again", a.Prev.Rev), p.clock().Now().UTC()
	if err := p.putRelease(ctx, cur); err != nil {
		return p.etcdError(err)
	}
	return nil
}
