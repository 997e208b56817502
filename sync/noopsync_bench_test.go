package sync_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// BenchmarkNoopSync: one SyncOnce of the Syncer on the Fake engine when
// nothing changed (N pods running as desired, their updates long done):
// what a sync costs hostlet itself besides the engine's list call.
func BenchmarkNoopSync(b *testing.B) {
	for _, n := range []int{10, 100} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			fake := synctest.NewFake()
			clk := clock.NewFake(time.Now())
			s, err := hsync.New(fake, hsync.Options{Instance: "bench", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: b.TempDir(), Clock: clk},
				slog.New(slog.DiscardHandler), eventlog.NewLog(100))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(s.Close)
			s.SetDesired(hsync.Desired{Pods: fakePods(b, n, "1"), Ready: true})
			ctx := b.Context()
			// Created, then ready, then ready long enough (when the Syncer
			// has rollouts: Complete).
			for _, d := range []time.Duration{0, time.Second, 11 * time.Second} {
				clk.Advance(d)
				if err := s.SyncOnce(ctx); err != nil {
					b.Fatal(err)
				}
			}
			for _, p := range s.Report().Pods {
				if p.Rollout != nil && p.Rollout.State != hsync.RolloutComplete {
					b.Fatalf("pod %s: rollout %+v, want Complete before the no-op syncs", p.ID, *p.Rollout)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.SyncOnce(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
