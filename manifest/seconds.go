package manifest

import (
	"math"
	"time"
)

// MaxSeconds is the largest value a count of seconds (grace period, probe
// delay, period, timeout) or a probe's failure threshold may hold: the
// range of Kubernetes' int32 fields, about 68 years. validate refuses
// more, so a time.Duration made from it never overflows.
const MaxSeconds = math.MaxInt32

// Seconds is n seconds as a time.Duration, held to 0..MaxSeconds so that a
// value validation did not see can neither wrap to a negative duration
// (which would make every wait return at once) nor overflow.
func Seconds(n int64) time.Duration {
	switch {
	case n <= 0:
		return 0
	case n > MaxSeconds:
		n = MaxSeconds
	}
	return time.Duration(n) * time.Second
}
