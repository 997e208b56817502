package gitsource

import (
	"math"
	"math/rand/v2"
	"time"
)

// minBackoffCap is the least the wait after failures grows to: as the
// syncer's pod backoff, enough that a fleet on a short interval (10 s by
// default) gives a struggling git server room.
const minBackoffCap = 5 * time.Minute

// pacer spaces one source's polls. Each wait is drawn uniformly in
// [0.9, 1.1] × its base, so that hosts started together (a fleet after a
// power cut) drift apart instead of polling in lockstep. The base is the
// interval; after n failures in a row it is interval × 2^(n-1) (interval,
// 2×, 4×, …) up to backoffCap(interval), jittered alike; a success brings
// it back to the interval. It is used by Run's goroutine only.
type pacer struct {
	interval time.Duration
	limit    time.Duration // backoffCap(interval)
	failures int
	rand     *rand.Rand
}

// newPacer returns a pacer for interval drawing from its own generator,
// seeded from the runtime's random source (one draw, at creation).
func newPacer(interval time.Duration) *pacer {
	return &pacer{
		interval: interval,
		limit:    backoffCap(interval),
		rand:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
}

// backoffCap is the most the base wait grows to after failures: 10 ×
// interval, and at least minBackoffCap. 10 × interval keeps a backoff for
// the long intervals (with a fixed 5 minutes, an interval of 5 minutes or
// more would never back off); the 5 minute floor makes the backoff worth
// having on short ones (10 × 10 s is under 2 minutes).
func backoffCap(interval time.Duration) time.Duration {
	if interval > math.MaxInt64/20 {
		return interval // an absurd interval: no room to grow (nor overflow)
	}
	return max(minBackoffCap, 10*interval)
}

// next returns the wait before the next poll, given whether the poll just
// made failed.
func (p *pacer) next(failed bool) time.Duration {
	if failed {
		p.failures++
	} else {
		p.failures = 0
	}
	base := p.interval
	for i := 1; i < p.failures && base < p.limit; i++ {
		base *= 2
	}
	return p.jitter(min(base, p.limit))
}

// jitter returns a duration drawn uniformly in [0.9, 1.1] × d.
func (p *pacer) jitter(d time.Duration) time.Duration {
	if d <= 0 || d > math.MaxInt64/2 {
		return d // nothing to draw from, or an absurd wait (no overflow)
	}
	spread := d / 5 // 20% of d, centred on d
	return d - spread/2 + time.Duration(p.rand.Int64N(int64(spread)+1))
}
