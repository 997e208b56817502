package gitsource

import (
	"math/rand/v2"
	"time"
)

// WithRand makes the source draw the jitter of its polls from r (seeded by
// the test, so that its waits repeat) and returns it; call it before Run.
func (s *Source) WithRand(r *rand.Rand) *Source {
	s.pace.rand = r
	return s
}

// BackoffCap is backoffCap, for the tests of package gitsource_test.
func BackoffCap(interval time.Duration) time.Duration { return backoffCap(interval) }
