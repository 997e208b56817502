package sources

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// podYAML is a valid manifest with one container; label v tells versions
// apart.
func podYAML(id, v string) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\nlabels: {v: %q}\ncontainers:\n  - name: app\n    image: example.org/app:1\n", id, v)
}

// podListYAML is a YAML list of valid manifests.
func podListYAML(v string, ids ...string) string {
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "- version: v1beta1\n  id: %s\n  labels: {v: %q}\n  containers:\n    - name: app\n      image: example.org/app:1\n", id, v)
	}
	return b.String()
}

// invalidPodYAML decodes but breaks two field rules.
func invalidPodYAML(id string) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\ncontainers:\n  - name: Bad_Name\n    image: example.org/app:1\n    ports: [{containerPort: 70000}]\n", id)
}

// portPodYAML binds host port 8080.
func portPodYAML(id, v string, hostPort int) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\nlabels: {v: %q}\ncontainers:\n  - name: app\n    image: example.org/app:1\n    ports: [{containerPort: 80, hostPort: %d}]\n", id, v, hostPort)
}

// harness runs sources into a Merger, recording every update, until the
// test ends.
type harness struct {
	m       *Merger
	mu      gosync.Mutex
	updates []Update
}

func startSources(t *testing.T, opts MergeOptions, srcs ...Source) *harness {
	t.Helper()
	var infos []SourceInfo
	for _, s := range srcs {
		infos = append(infos, SourceInfo{Name: s.Name(), Type: s.Type()})
	}
	m, err := NewMerger(infos, opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{m: m}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Update)
	var wg gosync.WaitGroup
	for _, s := range srcs {
		wg.Go(func() { s.Run(ctx, out) })
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case u := <-out:
				h.mu.Lock()
				h.updates = append(h.updates, u)
				h.mu.Unlock()
				m.Apply(u)
			}
		}
	})
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return h
}

// lastUpdate returns the last update recorded.
func (h *harness) lastUpdate() (Update, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.updates) == 0 {
		return Update{}, 0
	}
	return h.updates[len(h.updates)-1], len(h.updates)
}

// ids lists the accepted IDs in merge order, each with its label v.
func ids(st State) []string {
	var out []string
	for _, e := range st.Accepted {
		out = append(out, e.Manifest.ID+"="+e.Manifest.Labels["v"])
	}
	return out
}

// waitSet waits until the merged set is want (IDs with versions, in order)
// at the given revision of source 0 (any revision when rev is "") and the
// source reports no error.
func (h *harness) waitSet(t *testing.T, timeout time.Duration, want []string, rev string) State {
	t.Helper()
	var st State
	testkit.WaitFor(t, timeout, func() (bool, string) {
		st = h.m.State()
		s := st.Sources[0]
		got := ids(st)
		ok := slices.Equal(got, want) && s.Error == "" && (rev == "" || s.Revision == rev)
		return ok, fmt.Sprintf("set %v at revision %q, error %q; want %v at %q, no error", got, s.Revision, s.Error, want, rev)
	})
	return st
}

// waitErr waits until source i reports an error containing substr and
// returns the state.
func (h *harness) waitErr(t *testing.T, timeout time.Duration, i int, substr string) State {
	t.Helper()
	var st State
	testkit.WaitFor(t, timeout, func() (bool, string) {
		st = h.m.State()
		e := st.Sources[i].Error
		return e != "" && strings.Contains(e, substr), fmt.Sprintf("source error %q, want one containing %q", e, substr)
	})
	return st
}

// sameSet checks that st still holds want at revision rev.
func sameSet(t *testing.T, st State, want []string, rev string) {
	t.Helper()
	if got := ids(st); !slices.Equal(got, want) {
		t.Errorf("set after the error: %v, want the last good set %v", got, want)
	}
	if got := st.Sources[0].Revision; got != rev {
		t.Errorf("revision after the error: %q, want the last good revision %q", got, rev)
	}
}
