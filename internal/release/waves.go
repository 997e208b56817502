package release

import (
	"context"
	"fmt"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/fleet"
)

// waves writes the release's waves in turn, each in batches of
// MaxUnavailable hosts, waiting for each batch before the next; a batch
// that does not complete halts the release.
func (r *run) waves(ctx context.Context) error {
	rec := &r.rep.Release
	for i := range rec.Waves {
		wr := &rec.Waves[i]
		if len(wr.Changed) == 0 {
			wr.State, wr.Reason = fleet.StateComplete, "no host of it changes"
			continue
		}
		wr.State = fleet.StateWaiting
		size := r.o.MaxUnavailable.Of(len(wr.Hosts))
		if size <= 0 || size > len(wr.Changed) {
			size = len(wr.Changed)
		}
		for first := 0; first < len(wr.Changed); first += size {
			batch := wr.Changed[first:min(first+size, len(wr.Changed))]
			label := "wave " + wr.Name
			if size < len(wr.Changed) {
				label += fmt.Sprintf(" (hosts %d-%d of %d)", first+1, first+len(batch), len(wr.Changed))
			}
			reason, err := r.writeAndWait(ctx, batch, label)
			if err != nil {
				return r.p.etcdError(fmt.Errorf("%s: %w", label, err))
			}
			if reason != "" {
				return r.halt(ctx, i, label, reason, len(wr.Changed)-first-len(batch))
			}
		}
		wr.State = fleet.StateComplete
		rec.Updated = r.p.clock().Now().UTC()
		r.p.printf("wave %s: complete\n", wr.Name)
	}
	rec.State, rec.Updated = fleet.StateComplete, r.p.clock().Now().UTC()
	if err := r.p.putRelease(ctx, *rec); err != nil {
		return r.p.etcdError(err)
	}
	return nil
}

// halt halts the release at wave i (batch label, rest of its hosts not
// written) for reason: the record says so, later waves are not written.
func (r *run) halt(ctx context.Context, i int, label, reason string, rest int) error {
	rec := &r.rep.Release
	wr := &rec.Waves[i]
	wr.State, wr.Reason = fleet.StateHalted, reason
	rec.State, rec.Reason, rec.Updated = fleet.StateHalted, fmt.Sprintf("%s: %s", label, reason), r.p.clock().Now().UTC()
	var left []string
	for _, later := range rec.Waves[i+1:] {
		left = append(left, later.Name)
	}
	werr := r.p.putRelease(ctx, *rec)
	r.p.printf("%s: halted: %s\n", label, reason)
	if rest > 0 {
		r.p.printf("%s of wave %s not written\n", Plural(rest, "host"), wr.Name)
	}
	r.p.printf("%s changed; release halted, waves not written: %s\n", Plural(r.written, "host"), listOrNone(left))
	r.rep.Errors = append(r.rep.Errors, rec.Reason)
	err := fmt.Errorf("release %s halted: %s", ShortRev(rec.Rev), rec.Reason)
	if werr != nil {
		err = fmt.Errorf("%w (and the release record could not be written: %v)", err, r.p.etcdError(werr))
	}
	return err
}

// writeAndWait writes the changed keys of hosts (one transaction, or as
// few as etcd's limits allow) with the release record, then waits for the
// hosts to report the release. It returns why the release halts, or "".
func (r *run) writeAndWait(ctx context.Context, hosts []string, label string) (string, error) {
	rec := &r.rep.Release
	rec.Updated = r.p.clock().Now().UTC()
	var (
		puts  []clientv3.Op
		cmps  []clientv3.Cmp
		wrote int
	)
	for _, name := range hosts {
		h := r.set.byName[name]
		if len(h.Changed) > 0 {
			wrote++
		}
		for j, s := range h.Sets {
			if !slices.Contains(h.Changed, s.Source) {
				continue
			}
			key := h.key(r.p.Prefix, s.Source)
			puts = append(puts, clientv3.OpPut(key, string(h.enc[j])))
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", h.modRevs[key]))
		}
	}
	n, err := r.p.writeWave(ctx, cmps, puts, releaseOp(r.p.Prefix, *rec))
	if err != nil {
		return "", err
	}
	r.written += wrote
	note := ""
	if n > 1 {
		note = fmt.Sprintf(" in %d transactions", n)
	}
	if w := len(hosts) - wrote; w > 0 {
		note += fmt.Sprintf(", %s written before", Plural(w, "host"))
	}
	r.p.printf("%s: written (%s%s); waiting up to %s\n", label, Plural(wrote, "host"), note, r.o.WaveTimeout)

	// Every via: etcd source of a host holds the release now (unchanged
	// keys held it already): the host reports it on all.
	var waitFor []waitHost
	for _, name := range hosts {
		h := r.set.byName[name]
		waitFor = append(waitFor, waitHost{name: name, sources: h.sources(), pods: h.pods})
	}
	return r.p.waitWave(ctx, rec.Rev, waitFor, r.o.WaveTimeout)
}
