// Package reporter writes a host's status to etcd: the status document at
// <prefix>/status/<hostname> (no lease: the last report outlives the host),
// a liveness key <prefix>/alive/<hostname> under a lease that lapses when the
// host stops, and events under <prefix>/events/<hostname>/ with a 48 h
// lease. It runs on its own goroutine: etcd being down never slows the sync
// loop, and writes catch up when it returns.
package reporter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
)

// EventTTL is how long events stay in etcd.
const EventTTL = 48 * time.Hour

// Keys returns the status, liveness and events keys of a host.
func Keys(prefix, host string) (status, alive, eventsPrefix string) {
	return prefix + "/status/" + host, prefix + "/alive/" + host, prefix + "/events/" + host + "/"
}

// Options configure a Reporter.
type Options struct {
	Prefix   string
	Hostname string
	// Interval: the status is written when it changes and at least this
	// often; the liveness lease is 3 × Interval, at least 10 s.
	Interval time.Duration
	// Document returns the status document to write.
	Document func() any
	// Events are written as they are recorded.
	Events *eventlog.Log
	// Clock times the interval, the status rewrite, the events' lease
	// renewal and the liveness key's value; nil means clock.Real. Each
	// etcd call's own timeout is a context deadline, on the real clock.
	Clock clock.Clock
}

// Reporter writes status, liveness and events to etcd.
type Reporter struct {
	cli  *clientv3.Client
	opts Options
	log  *slog.Logger
	wake chan struct{}
}

// New returns a reporter writing through cli.
func New(cli *clientv3.Client, opts Options, log *slog.Logger) *Reporter {
	opts.Clock = clock.Or(opts.Clock)
	return &Reporter{cli: cli, opts: opts, log: log.With("component", "etcd-reporter"), wake: make(chan struct{}, 1)}
}

// Trigger asks for a status write soon (after a sync); calls coalesce.
func (r *Reporter) Trigger() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// LeaseTTL is the liveness lease for a sync interval.
func LeaseTTL(interval time.Duration) time.Duration {
	return max(3*interval, 10*time.Second)
}

// Run reports until ctx ends, then revokes the liveness lease so the host
// shows as not alive at once.
//
// Events are read from the log itself (a ring buffer of the newest events),
// from the one after the last written: events recorded before Run started
// are written too, and while etcd is down nothing is lost but what the ring
// drops (the oldest). The subscription only wakes the loop.
func (r *Reporter) Run(ctx context.Context) {
	evs, cancel := r.opts.Events.Subscribe(1)
	defer cancel()
	t := r.opts.Clock.NewTicker(r.opts.Interval)
	defer t.Stop()
	st := &state{}
	defer r.revoke(st)
	r.report(ctx, st)
	for {
		select {
		case <-ctx.Done():
			return
		case <-evs:
			r.report(ctx, st)
		case <-r.wake:
			r.report(ctx, st)
		case <-t.C():
			r.report(ctx, st)
		}
	}
}

// ReportOnce writes the status and every buffered event once (for
// `hostlet run --once`); the liveness key is not written.
func (r *Reporter) ReportOnce(ctx context.Context) error {
	st := &state{noAlive: true}
	r.report(ctx, st)
	if st.statusErr != nil {
		return fmt.Errorf("write status to etcd: %w", st.statusErr)
	}
	return nil
}

// state is what one reporter loop remembers between writes.
type state struct {
	lastDoc    []byte
	lastWrite  time.Time
	written    bool
	statusErr  error
	aliveLease clientv3.LeaseID
	noAlive    bool
	eventLease clientv3.LeaseID
	eventGrant time.Time
	// eventsDone is the Seq of the last event written.
	eventsDone uint64
}

func (r *Reporter) op(ctx context.Context, f func(context.Context) error) error {
	octx, c := context.WithTimeout(ctx, 5*time.Second)
	defer c()
	return f(octx)
}

func (r *Reporter) revoke(st *state) {
	if st.aliveLease == 0 {
		return
	}
	ctx, c := context.WithTimeout(context.Background(), 5*time.Second)
	defer c()
	if _, err := r.cli.Revoke(ctx, st.aliveLease); err != nil {
		r.log.Debug("revoke the liveness lease", "error", err)
	}
}

func (r *Reporter) report(ctx context.Context, st *state) {
	statusKey, aliveKey, eventsPrefix := Keys(r.opts.Prefix, r.opts.Hostname)
	if !st.noAlive {
		r.alive(ctx, st, aliveKey)
	}
	// Status, when changed or due.
	doc, err := json.Marshal(r.opts.Document())
	if err != nil {
		r.log.Warn("marshal status", "error", err)
		return
	}
	cmp := stripTime(doc)
	if !st.written || !bytes.Equal(cmp, st.lastDoc) || r.opts.Clock.Since(st.lastWrite) >= r.opts.Interval {
		st.statusErr = r.op(ctx, func(c context.Context) error { _, err := r.cli.Put(c, statusKey, string(doc)); return err })
		if st.statusErr != nil {
			st.written = false
			r.log.Debug("write status", "error", st.statusErr)
		} else {
			st.lastDoc, st.lastWrite, st.written = cmp, r.opts.Clock.Now(), true
		}
	}
	r.flushEvents(ctx, st, eventsPrefix)
}

// alive keeps the liveness key's lease, granting a new one (and writing
// the key again) when the old one is gone.
func (r *Reporter) alive(ctx context.Context, st *state, key string) {
	if st.aliveLease != 0 {
		err := r.op(ctx, func(c context.Context) error { _, err := r.cli.KeepAliveOnce(c, st.aliveLease); return err })
		if err == nil || ctx.Err() != nil {
			// Kept alive, or stopping: a keep-alive cut short by the stop
			// says nothing of the lease, which is still ours for revoke.
			return
		}
		st.aliveLease = 0
	}
	err := r.op(ctx, func(c context.Context) error {
		l, err := r.cli.Grant(c, int64(LeaseTTL(r.opts.Interval).Seconds()))
		if err != nil {
			return err
		}
		// Ours from now: a Put cut short by a stop may still have been
		// applied, and the revoke at the end must find its lease.
		st.aliveLease = l.ID
		_, err = r.cli.Put(c, key, r.opts.Clock.Now().UTC().Format(time.RFC3339), clientv3.WithLease(l.ID))
		return err
	})
	if err != nil {
		r.log.Debug("liveness key", "error", err)
	}
}

// flushEvents writes the events not written yet under a 48 h lease,
// granted anew every hour so an event lives 48 to 49 hours.
func (r *Reporter) flushEvents(ctx context.Context, st *state, prefix string) {
	var pending []eventlog.Event
	for _, e := range r.opts.Events.List() {
		if e.Seq > st.eventsDone {
			pending = append(pending, e)
		}
	}
	if len(pending) == 0 {
		return
	}
	if st.eventLease == 0 || r.opts.Clock.Since(st.eventGrant) > time.Hour {
		err := r.op(ctx, func(c context.Context) error {
			l, err := r.cli.Grant(c, int64(EventTTL.Seconds()))
			if err == nil {
				st.eventLease, st.eventGrant = l.ID, r.opts.Clock.Now()
			}
			return err
		})
		if err != nil {
			return
		}
	}
	for _, e := range pending {
		b, _ := json.Marshal(e)
		key := fmt.Sprintf("%s%s-%06d", prefix, e.Time.UTC().Format("20060102T150405.000000000Z"), e.Seq)
		if err := r.op(ctx, func(c context.Context) error {
			_, err := r.cli.Put(c, key, string(b), clientv3.WithLease(st.eventLease))
			return err
		}); err != nil {
			st.eventLease = 0
			return
		}
		st.eventsDone = e.Seq
	}
}

// stripTime drops what changes on every sync ("time", "lastSync") from a
// status document, to compare content.
func stripTime(doc []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil {
		return doc
	}
	delete(m, "time")
	delete(m, "lastSync")
	b, _ := json.Marshal(m)
	return b
}
