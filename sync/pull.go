package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// DefaultPullTimeout bounds one image pull when Options.PullTimeout is 0.
const DefaultPullTimeout = 10 * time.Minute

// puller runs the image pulls a sync needs outside of it, so that a slow or
// hanging registry never delays another pod: a sync asks (check) whether an
// image can be used now; an image that must be pulled is pulled in the
// background, at most `concurrency` at a time, each bounded by timeout, and
// the pod waits (Pending, reason Pulling) until a later sync finds the pull
// done. Concurrent asks for one image share one pull. Every pull runs under
// the context of the sync that started it and is joined by stop.
type puller struct {
	rt      ImageEnsurer
	timeout time.Duration
	// what the jobs are ("pull image", "build image"), the config key of
	// their timeout and the error class of one that outlasts it.
	what, timeoutKey string
	class            error
	// wanted, when set, says whether an image is still desired: a job
	// whose turn comes after its image stopped being desired (a build of
	// a revision superseded while it waited) is dropped.
	wanted func(ref string) bool
	sem    chan struct{}
	log    *slog.Logger
	// finished is told when a pull ends (the Syncer's Trigger).
	finished func()
	clock    clock.Clock

	mu    gosync.Mutex
	pulls map[string]*pull // by image reference
	// changed is closed and replaced whenever a pull ends.
	changed chan struct{}
	wg      gosync.WaitGroup
}

// pull is one background pull. Once done, its outcome is offered to the
// syncs that run until the end of the first sync that began after it
// ended; then it is forgotten and the next sync asks afresh.
type pull struct {
	cancel context.CancelFunc
	done   bool
	err    error
	// offered: done before the running sync began; dropped when it ends.
	offered bool
}

func newPuller(rt ImageEnsurer, timeout time.Duration, concurrency int, log *slog.Logger, finished func(), clk clock.Clock) *puller {
	if timeout <= 0 {
		timeout = DefaultPullTimeout
	}
	return &puller{
		rt: rt, timeout: timeout, what: "pull image", timeoutKey: "sync.pullTimeout", class: hruntime.ErrImagePull, sem: make(chan struct{}, max(concurrency, 1)), log: log, finished: finished, clock: clock.Or(clk),
		pulls: map[string]*pull{}, changed: make(chan struct{}),
	}
}

// check reports whether image ref can be used now under policy: nil when it
// is present (or its pull just succeeded), pulling when a pull of it runs
// (started now if needed), or the error of a failed pull or presence check.
// It never waits for a pull.
func (p *puller) check(ctx context.Context, ref, policy string) (pulling bool, err error) {
	if known, running, err := p.known(ref); known {
		return running, err
	}
	if policy != hruntime.PullAlways {
		// A presence check: the engine answers it at once.
		err := p.rt.EnsureImage(ctx, ref, hruntime.PullNever)
		if err == nil || policy == hruntime.PullNever || !errors.Is(err, hruntime.ErrImageNeverPull) {
			return false, err
		}
	}
	p.start(ctx, ref, policy)
	return true, nil
}

// known reports whether a job of ref runs, or ended not long ago with
// err.
func (p *puller) known(ref string) (known, running bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pl := p.pulls[ref]
	if pl == nil {
		return false, false, nil
	}
	return true, !pl.done, pl.err
}

// checkBuild reports whether image ref, built by build, can be used now:
// nil when it is present (or its build just succeeded), building when a
// build of it runs (started now if needed), or the error of a failed
// build or presence check. It never waits for a build.
func (p *puller) checkBuild(ctx context.Context, ref string, build func(ctx context.Context) error) (building bool, err error) {
	if known, running, err := p.known(ref); known {
		return running, err
	}
	err = p.rt.EnsureImage(ctx, ref, hruntime.PullNever)
	if err == nil || !errors.Is(err, hruntime.ErrImageNeverPull) {
		return false, err
	}
	p.start(ctx, ref, "", build)
	return true, nil
}

// start begins a background job (a pull of ref with policy, or run when
// it is set) unless one runs already for ref.
func (p *puller) start(ctx context.Context, ref, policy string, run ...func(context.Context) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pulls[ref] != nil {
		return
	}
	job := func(ctx context.Context) error { return p.rt.EnsureImage(ctx, ref, policy) }
	if len(run) > 0 {
		job = run[0]
	}
	pctx, cancel := context.WithCancel(ctx)
	pl := &pull{cancel: cancel}
	p.pulls[ref] = pl
	p.log.Info(p.what+" outside the sync", "image", ref, "policy", policy, "timeout", p.timeout)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		err := p.run(pctx, ref, job)
		stopped := pctx.Err() != nil
		p.mu.Lock()
		pl.done, pl.err = true, err
		if stopped && p.pulls[ref] == pl {
			// Cancelled with the sync that started it, not failed: the
			// next sync asks afresh.
			delete(p.pulls, ref)
		}
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		if !stopped {
			p.finished()
		}
	}()
}

// errSuperseded marks a job dropped before it ran: its image is no longer
// desired.
var errSuperseded = errors.New("not run: no desired pod names the image any more")

// errPullTimeout marks a pull or build that outlasted its timeout.
var errPullTimeout = errors.New("timed out")

// run waits for a free slot, then runs job within the timeout.
func (p *puller) run(ctx context.Context, ref string, job func(context.Context) error) error {
	select {
	case p.sem <- struct{}{}:
		defer func() { <-p.sem }()
	case <-ctx.Done():
		return fmt.Errorf("%s %s: %w", p.what, ref, ctx.Err())
	}
	if p.wanted != nil && !p.wanted(ref) {
		return fmt.Errorf("%s %s: %w", p.what, ref, errSuperseded)
	}
	start := p.clock.Now()
	tctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	err := job(tctx)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s %s: %w after %s (%s): %w", p.what, ref, errPullTimeout, p.timeout, p.timeoutKey, p.class)
	}
	if err == nil {
		p.log.Debug(p.what+" done", "image", ref, "duration", p.clock.Since(start).Round(time.Millisecond))
	}
	return err
}

// beginPass marks the pulls done so far as offered to the sync now
// beginning; endPass forgets them.
func (p *puller) beginPass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pl := range p.pulls {
		if pl.done {
			pl.offered = true
		}
	}
}

func (p *puller) endPass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for ref, pl := range p.pulls {
		if pl.offered {
			delete(p.pulls, ref)
		}
	}
}

// outstanding reports whether a pull runs, or ended without being offered
// to a sync yet.
func (p *puller) outstanding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pl := range p.pulls {
		if !pl.offered {
			return true
		}
	}
	return false
}

// wait waits until no pull runs, or ctx ends.
func (p *puller) wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		running := false
		for _, pl := range p.pulls {
			running = running || !pl.done
		}
		changed := p.changed
		p.mu.Unlock()
		if !running {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stop cancels every running pull and waits for their goroutines.
func (p *puller) stop() {
	p.mu.Lock()
	for _, pl := range p.pulls {
		pl.cancel()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
