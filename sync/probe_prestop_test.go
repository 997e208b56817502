package sync_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// A probe's restart runs the container's preStop hook outside the sync
// lock: a sync of another pod goes on while the hook waits.
func TestAProbeRestartsPreStopHoldsNoSync(t *testing.T) {
	asked, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		close(asked)
		<-release
	}))
	t.Cleanup(srv.Close)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	fake := synctest.NewFake()
	s := newFakeSyncer(t, fake)
	slow := decodePod(t, fmt.Sprintf("version: v1beta1\nid: slow\nterminationGracePeriodSeconds: 30\ncontainers:\n  - name: app\n    image: example.org/app:1\n    ports: [{containerPort: %s}]\n    lifecycle:\n      preStop: {httpGet: {path: /drain, port: %q}}\n", u.Port(), u.Port()))
	other := func(v string) hsync.Pod {
		return decodePod(t, "version: v1beta1\nid: other\ncontainers:\n  - {name: app, image: example.org/other:"+v+"}\n")
	}
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{slow, other("1")}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, c := range listed(t, fake) {
		if c.Pod() == "slow" && c.Slot() == "app" {
			id = c.ID
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.OnUnhealthyAt(t.Context(), "slow", "app", id, u.Hostname(), 30*time.Second)
	}()
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the preStop hook was never run")
	}
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{slow, other("2")}, Ready: true})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := s.SyncOnce(ctx); err != nil {
		t.Fatalf("a sync while another pod's preStop hook runs: %v", err)
	}
	close(release)
	<-done
	for _, c := range listed(t, fake) {
		if c.Pod() == "other" && c.Image != "example.org/other:2" && c.State == hruntime.StateRunning {
			t.Errorf("other runs %s, want example.org/other:2", c.Image)
		}
	}
}
