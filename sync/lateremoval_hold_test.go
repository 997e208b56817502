package sync_test

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// A pod held after its own apply ended, while the pass still works on
// another pod, is held for the rest of the pass too: the container its
// recreate stopped is not removed (not even once an operator started it
// again by hand), nor the volume its new version dropped; both wait for
// the release.
func TestHoldTakenMidPassKeepsWhatTheRecreateLeft(t *testing.T) {
	fake := synctest.NewFake()
	gate := &stopGate{Fake: fake, pod: "zzz", entered: make(chan struct{}), release: make(chan struct{})}
	s, err := hsync.New(gate, hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: t.TempDir(), Concurrency: 1},
		slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := t.Context()
	web1 := "version: v1beta1\nid: web\nvolumes: [{name: cache}]\ncontainers:\n  - {name: app, image: \"example.org/web:1\", volumeMounts: [{name: cache, mountPath: /cache}]}\n"
	web2 := "version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: \"example.org/web:2\"}\n"
	set := func(web, z string) {
		s.SetDesired(hsync.Desired{Ready: true, Pods: []hsync.Pod{decodePod(t, web), decodePod(t, fmt.Sprintf(pullPodFmt, "zzz", "example.org/zzz:"+z))}})
	}
	set(web1, "1")
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	oldWeb := slices.IndexFunc(listed(t, fake), func(c hruntime.Container) bool { return c.Pod() == "web" })
	oldID := listed(t, fake)[oldWeb].ID
	set(web2, "2")
	synced := make(chan error, 1)
	go func() { synced <- s.SyncOnce(ctx) }()
	<-gate.entered // web's apply is done; the pass is stopping zzz's container
	if _, err := s.Hold(ctx, "web", "alice", "incident: keep the old one"); err != nil {
		t.Fatal(err)
	}
	volumes, _ := fake.ListVolumes(ctx)
	if err := fake.Start(ctx, oldID); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(listed(t, fake), func(c hruntime.Container) bool { return c.ID == oldID }) {
		t.Errorf("web was held, then the pass removed its old container %.12s", oldID)
	}
	if after, _ := fake.ListVolumes(ctx); !slices.Equal(after, volumes) {
		t.Errorf("web was held, then the pass removed volumes: %q -> %q", volumes, after)
	}
	if err := s.Release("web"); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var webs []string
	for _, c := range listed(t, fake) {
		if c.Pod() == "web" {
			webs = append(webs, c.Image)
		}
	}
	if !slices.Equal(webs, []string{"example.org/web:2"}) {
		t.Errorf("after the release web has %q, want example.org/web:2 alone", webs)
	}
	if after, _ := fake.ListVolumes(ctx); len(after) != len(volumes)-1 {
		t.Errorf("after the release volumes %q, want web's cache gone from %q", after, volumes)
	}
}
