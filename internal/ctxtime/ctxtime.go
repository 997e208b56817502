// Package ctxtime holds time helpers that respect a context, so every wait
// in hostlet ends when its owner is cancelled.
package ctxtime

import (
	"context"
	"time"
)

// Sleep waits d, or until ctx ends; it reports whether d passed. A d of
// zero or less returns at once, true unless ctx has ended.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
