package agent_test

// Attacks on pruning pause images (issue 15's follow-up).

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/hostlet/hostlet/internal/agent"
)

// recordingRemover removes whatever it is asked to (no container uses the
// image at that moment), recording it.
type recordingRemover struct{ removed []string }

func (r *recordingRemover) RemoveImage(_ context.Context, ref string) error {
	r.removed = append(r.removed, ref)
	return nil
}

// Two hostlets (instances a and b, as the config's instance key allows)
// share an engine and run the same binary: their pause image is the SAME
// tag, hostlet-pause:<hash of the binary>, and both lists record it. When
// a is upgraded, it prunes that tag at its start unless an infra container
// uses it at that moment, though it is b's current pause image: b's next
// multi-container pod cannot get its infra container (the tag is gone,
// and a pull of hostlet-pause:<hash> from Docker Hub fails) until b is
// restarted. "Images of other hostlets on the engine are never touched"
// does not hold: the list says which images a used, not which it owns.
func TestAttackPrunePauseImageSharedWithAnotherInstance(t *testing.T) {
	const old, upgraded = "hostlet-pause:0123456789ab", "hostlet-pause:ba9876543210"
	stateA, stateB := t.TempDir(), t.TempDir()
	rm := &recordingRemover{}
	log := slog.New(slog.DiscardHandler)
	// Both started on the old binary: each records the image it used.
	agent.PrunePauseImages(t.Context(), rm, stateA, old, log)
	agent.PrunePauseImages(t.Context(), rm, stateB, old, log)
	// a restarts on the new binary; b keeps running on old.
	agent.PrunePauseImages(t.Context(), rm, stateA, upgraded, log)
	if slices.Contains(rm.removed, old) {
		t.Errorf("instance a removed %s, the current pause image of instance b on the same engine (removed: %q)", old, rm.removed)
	}
}
