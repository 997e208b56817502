package manifest

import (
	"math"
	"testing"
	"time"
)

func TestSecondsNeverWraps(t *testing.T) {
	for _, tc := range []struct {
		in   int64
		want time.Duration
	}{
		{0, 0},
		{-1, 0},
		{math.MinInt64, 0},
		{10, 10 * time.Second},
		{MaxSeconds, MaxSeconds * time.Second},
		{MaxSeconds + 1, MaxSeconds * time.Second},
		// 9223372037 s * 1e9 wraps to a negative duration without the bound.
		{9223372037, MaxSeconds * time.Second},
		{math.MaxInt64, MaxSeconds * time.Second},
	} {
		if got := Seconds(tc.in); got != tc.want {
			t.Errorf("Seconds(%d) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
