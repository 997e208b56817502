package runtime

import (
	"testing"
	"time"
)

func TestStopOptions(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want *int
	}{
		{-1, nil}, // sync.DefaultStopTimeout: the container's own StopTimeout
		{0, stopSecs(0)},
		{1500 * time.Millisecond, stopSecs(2)},
		{10 * time.Second, stopSecs(10)},
	} {
		got := stopOptions(tc.in).Timeout
		switch {
		case tc.want == nil && got != nil:
			t.Errorf("stopOptions(%v).Timeout = %d, want nil (engine default)", tc.in, *got)
		case tc.want != nil && (got == nil || *got != *tc.want):
			t.Errorf("stopOptions(%v).Timeout = %v, want %d", tc.in, got, *tc.want)
		}
	}
}

func stopSecs(i int) *int { return &i }
