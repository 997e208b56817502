package rollouts

import (
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
)

// Seen is what one sync saw, for Advance.
type Seen struct {
	Now time.Time
	// Declared are the desired pods as their sources declare them, Hashes
	// their PodHashes by ID (a pod missing there is hashed).
	Declared []podspec.Pod
	Hashes   map[string]string
	// Ready: every source has delivered its first set; the rollouts of
	// the pods no source declares (not held, no container left, see
	// Present) are forgotten.
	Ready   bool
	Present func(id string) bool
	// Observe is what the sync saw of desired pod p (hash its PodHash;
	// good the manifest of its last ready version, nil for none). It is
	// called with the store's lock held, only for a pod whose rollout is
	// not simply Complete at hash.
	Observe func(p podspec.Pod, hash string, good *manifest.Manifest) Observation
}

// Note is what one pod's step decided (Outcome never OutcomeNone).
type Note struct {
	Pod, Revision string
	// Reason is the rollout's reason, PreviousHash its last ready
	// version's hash.
	Reason, PreviousHash string
	Outcome              Outcome
}

// Advance moves every declared pod's rollout on by what a sync saw and
// returns what was decided, pod by pod; a rollback is counted. Save
// writes what changed.
func (s *Store) Advance(seen Seen) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	var notes []Note
	for _, p := range seen.Declared {
		if n, ok := s.stepLocked(seen, p); ok {
			notes = append(notes, n)
		}
	}
	if seen.Ready {
		// Forget the pods no source declares any more (and not held):
		// removed, their last good version goes too.
		for id, r := range s.pods {
			if _, declared := seen.Hashes[id]; !declared && r.Hold == nil && !seen.Present(id) {
				delete(s.pods, id)
				s.changed(r.Bad != nil)
			}
		}
	}
	return notes
}

// Settled reports whether Advance would look at nothing (the common case
// of a no-op sync): every declared pod (hashes their PodHashes by ID) is
// Complete at its hash, neither held nor held back, and, when ready, the
// store keeps no pod that is neither declared nor held.
func (s *Store) Settled(declared []podspec.Pod, hashes map[string]string, ready bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range declared {
		r, hash := s.pods[p.Manifest.ID], hashes[p.Manifest.ID]
		if r == nil || hash == "" || !r.settled(hash) {
			return false
		}
	}
	if ready {
		for id, r := range s.pods {
			if _, ok := hashes[id]; !ok && r.Hold == nil {
				return false
			}
		}
	}
	return true
}

// settled: nothing to look at in r for a pod whose desired version hashes
// to hash.
func (r *podRollout) settled(hash string) bool {
	return r.Hold == nil && r.Bad == nil && r.Rollout.State == RolloutComplete && r.Rollout.Hash == hash
}

// stepLocked steps pod p's rollout; false when nothing was decided.
func (s *Store) stepLocked(seen Seen, p podspec.Pod) (Note, bool) {
	id := p.Manifest.ID
	hash := seen.Hashes[id]
	if hash == "" {
		hash = manifest.PodHash(p.Manifest)
	}
	r := s.get(id)
	if r.settled(hash) {
		return Note{}, false // the common case: nothing to look at
	}
	before, badBefore := r.Rollout, r.Bad
	var good *manifest.Manifest
	if r.Good != nil {
		good = &r.Good.Manifest
	}
	out := r.step(seen.Observe(p, hash, good))
	if out != OutcomeNone || !r.Rollout.same(before) {
		s.file.Changed()
	}
	if out == OutcomeHeld || r.Bad != badBefore {
		s.holds.Changed()
	}
	if out == OutcomeRolledBack {
		s.rollbacks[id]++
	}
	if out == OutcomeNone {
		return Note{}, false
	}
	return Note{Pod: id, Revision: p.Revision, Reason: r.Rollout.Reason, PreviousHash: r.Rollout.PreviousHash, Outcome: out}, true
}
