package rollouts

import (
	"fmt"
	"time"
)

// Hold takes an operator's hold on pod id (it need not exist yet), as of
// now: from then on the pod is held until Release. The hold is saved
// before Hold returns; a hold that cannot be saved is not taken. by and
// reason have their control characters replaced and are cut to their
// bounds. A change of the pod under way is not waited for here (see
// Applying).
func (s *Store) Hold(id, by, reason string, now time.Time) (Hold, error) {
	if len(id) > 253 || !podIDRE.MatchString(id) {
		return Hold{}, fmt.Errorf("hold %q: not a pod ID (an RFC 1123 DNS subdomain)", id)
	}
	h := Hold{By: cleanText(by, 256), Reason: cleanText(reason, MaxHoldText), Since: now.UTC()}
	if h.By == "" {
		h.By = "unknown"
	}
	s.mu.Lock()
	r := s.pods[id]
	if r == nil || r.Hold == nil {
		n := 0
		for _, o := range s.pods {
			if o.Hold != nil {
				n++
			}
		}
		if n >= MaxHolds {
			s.mu.Unlock()
			return Hold{}, fmt.Errorf("hold %s: %d pods are held already, the most this host keeps", id, MaxHolds)
		}
	}
	r = s.get(id)
	prev, prevRollout := r.Hold, r.Rollout
	r.Hold = &h
	r.Rollout = Rollout{State: RolloutHeld, Revision: r.Rollout.Revision, Hash: r.Rollout.Hash, PreviousHash: r.Rollout.PreviousHash,
		Since: h.Since, Reason: h.Reason, Hold: r.Hold}
	s.changed(true)
	snap := s.snapshotLocked()
	s.mu.Unlock()
	if err := s.write(snap); err != nil {
		s.mu.Lock()
		r.Hold, r.Rollout = prev, prevRollout
		s.changed(true)
		s.mu.Unlock()
		return Hold{}, fmt.Errorf("hold %s: %w", id, err)
	}
	return h, nil
}

// Release ends the hold on pod id (ErrNotHeld when there is none), saved
// before it returns.
func (s *Store) Release(id string) error {
	s.mu.Lock()
	r := s.pods[id]
	if r == nil || r.Hold == nil {
		s.mu.Unlock()
		return fmt.Errorf("release %q: %w", id, ErrNotHeld)
	}
	prev := r.Hold
	r.Hold = nil
	s.changed(true)
	snap := s.snapshotLocked()
	s.mu.Unlock()
	if err := s.write(snap); err != nil {
		s.mu.Lock()
		r.Hold = prev
		s.changed(true)
		s.mu.Unlock()
		return fmt.Errorf("release %s: %w", id, err)
	}
	return nil
}

// Begin is asked right before a pod is applied: a pod held (since the
// plan was made) is left as it is; any other is marked as being applied
// until End. The check and the mark are one step under the lock Hold
// takes: a hold either sees the mark (and waits, see Applying) or the
// apply sees the hold.
func (s *Store) Begin(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.pods[id]; r != nil && r.Hold != nil {
		return false
	}
	s.applying[id] = make(chan struct{})
	return true
}

// Held reports whether pod id is held now (Begin would refuse it).
func (s *Store) Held(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.pods[id]
	return r != nil && r.Hold != nil
}

// End ends the mark of Begin.
func (s *Store) End(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.applying[id]; ch != nil {
		close(ch)
		delete(s.applying, id)
	}
}

// Applying returns a channel closed when the change of pod id under way
// ends, nil when none is.
func (s *Store) Applying(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch := s.applying[id]; ch != nil {
		return ch
	}
	return nil
}
