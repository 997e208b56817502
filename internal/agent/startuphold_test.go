package agent

import (
	"slices"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/desired"
)

// TestStartupHoldKeepsPodsOfLaterSources: a source's pods reach the
// syncer only once every source listed before it has delivered a set (an
// error is no delivery), or once the waits of those not delivered (each
// its own timeout + 5 s; push sources none) have passed; the first source's pods are never held, a
// restart whose sources all loaded saved sets holds nothing, and an ended
// hold never comes back.
func TestStartupHoldKeepsPodsOfLaterSources(t *testing.T) {
	start := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	srcs := []config.Source{
		{Name: "local", Type: "file", Timeout: 10 * time.Second},
		{Name: "registry", Type: "etcd", Timeout: 2 * time.Second},
		{Name: "hook", Type: config.TypePush, Timeout: time.Hour},
	}
	entry := func(source, id string) desired.Entry {
		return desired.Entry{Sourced: manifest.Sourced{Origin: manifest.Origin{Source: source}, Manifest: manifest.Manifest{ID: id}}}
	}
	state := func(delivered ...string) sources.State {
		st := sources.State{Accepted: []desired.Entry{entry("local", "web"), entry("registry", "db"), entry("hook", "job")}}
		for _, s := range srcs {
			st.Sources = append(st.Sources, sources.Status{Name: s.Name, Delivered: slices.Contains(delivered, s.Name)})
		}
		return st
	}
	steps := []struct {
		name  string
		st    sources.State
		after time.Duration
		want  []string
		wait  time.Duration
	}{
		{"nothing delivered: the first source's pods go", state("hook"), 0, []string{"web"}, 7 * time.Second},
		{"registry answered first: held behind local", state("registry", "hook"), time.Second, []string{"web"}, 6 * time.Second},
		{"local delivered", state("local", "registry", "hook"), 2 * time.Second, []string{"web", "db", "job"}, 0},
		{"held no more", state("registry"), 3 * time.Second, []string{"web", "db", "job"}, 0},
	}
	h := newStartupHold(srcs, start)
	for _, s := range steps {
		now := start.Add(s.after)
		d := h.desired(s.st, now)
		var got []string
		for _, p := range d.Pods {
			got = append(got, p.Manifest.ID)
		}
		if !slices.Equal(got, s.want) || h.wait(now) != s.wait {
			t.Errorf("%s: pods %v, wait %s; want %v, %s", s.name, got, h.wait(now), s.want, s.wait)
		}
	}
	expired := newStartupHold(srcs, start)
	if d := expired.desired(state("registry", "hook"), start.Add(15*time.Second)); len(d.Pods) != 3 {
		t.Errorf("past the longest source timeout: %d pods, want all 3", len(d.Pods))
	}
	// A down source waited for as long as its own timeout, not the
	// longest one.
	down := newStartupHold([]config.Source{{Name: "cmdb", Type: "http", Timeout: 2 * time.Second}, {Name: "local", Type: "file", Timeout: 30 * time.Second}}, start)
	st := sources.State{
		Accepted: []desired.Entry{entry("local", "web")},
		Sources:  []sources.Status{{Name: "cmdb", Error: "connection refused"}, {Name: "local", Delivered: true}},
	}
	for _, c := range []struct {
		after time.Duration
		pods  int
	}{{6 * time.Second, 0}, {7 * time.Second, 1}} {
		if d := down.desired(st, start.Add(c.after)); len(d.Pods) != c.pods {
			t.Errorf("cmdb down since start, %s later: %d pods, want %d", c.after, len(d.Pods), c.pods)
		}
	}
	saved := newStartupHold(srcs, start)
	if d := saved.desired(state("local", "registry", "hook"), start); len(d.Pods) != 3 || saved.wait(start) != 0 {
		t.Errorf("every source loaded a saved set: %d pods, hold %s; want all 3, none", len(d.Pods), saved.wait(start))
	}
}
