package sources

import (
	"testing"
	"time"
)

// TestStateDoesNotWaitForSaves (issue 13): State, which /status, /metrics
// and the reporter read, never waits for an update that is being taken
// and saved: saving holds only the update lock, and State shows the merge
// as last taken.
func TestStateDoesNotWaitForSaves(t *testing.T) {
	m := newMerger(t, MergeOptions{StateDir: t.TempDir()}, "local")
	m.Apply(Update{Source: "local", Revision: "l1", Manifests: decoded(t, "local", podYAML("web", "1"))})

	m.applyMu.Lock() // an update being merged and saved
	defer m.applyMu.Unlock()
	done := make(chan State, 1)
	go func() { done <- m.State() }()
	select {
	case st := <-done:
		wantList(t, "accepted while an update is saved", accepted(st), []string{"web=1@l1"})
	case <-time.After(5 * time.Second):
		t.Fatal("State waited for the update lock (a save in progress)")
	}
}
