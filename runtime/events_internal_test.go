package runtime

import (
	"testing"
	"time"
)

// TestReconnectResumesAfterTheLatestEvent: a reconnect asks the engine for
// what came after the latest event delivered, even when the events came
// out of time order (Podman's are written by several processes): resuming
// from an earlier one would deliver the later ones twice.
func TestReconnectResumesAfterTheLatestEvent(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cases := []struct {
		name   string
		events []int
		want   time.Time
	}{
		{"in order", []int{1, 2, 3}, at(3).Add(time.Nanosecond)},
		{"out of order", []int{1, 3, 2}, at(3).Add(time.Nanosecond)},
		{"one of an engine whose clock is behind", []int{-5, -6}, at(-5).Add(time.Nanosecond)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resume := eventCursor{since: at(0)}
			for _, s := range c.events {
				resume.after(at(s))
			}
			if !resume.since.Equal(c.want) {
				t.Errorf("resume at %s, want %s", resume.since, c.want)
			}
		})
	}
}
