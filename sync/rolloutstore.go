package sync

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/manifest"
)

// RolloutsFile is the file under stateDir holding every pod's rollout:
// its state, the last version that was ready (the whole desired pod, its
// env values and files included: what a rollback restores, also after a
// restart) and the version held back. It is sealed (AES-256-GCM, a key
// derived from env-hash.key): it holds secrets, and one hostlet did not
// write does not open.
const RolloutsFile = "rollouts.json"

// HoldsFile is the file under stateDir holding the operators' holds, apart
// from RolloutsFile: the hold is the operator's safety lock, and survives
// the loss of the rollouts (a damaged file, a new key).
const HoldsFile = "holds.json"

// rolloutStore keeps the pods' rollouts and holds and saves them (the
// embedded stateFile is RolloutsFile); guarded by the Syncer's mu.
type rolloutStore struct {
	stateFile
	Pods  map[string]*podRollout `json:"pods"`
	holds stateFile
}

// savedHolds is the content of HoldsFile.
type savedHolds struct {
	Pods map[string]*Hold `json:"pods"`
}

// loadRollouts reads the rollouts and holds saved in stateDir; sealer
// seals the rollouts (nil without a stateDir). A file that cannot be read
// is set aside and reported (TrackStateFiles): hostlet goes on without
// what it held.
func loadRollouts(stateDir string, clk clock.Clock, sealer *seal.Sealer, log *slog.Logger) *rolloutStore {
	rs := &rolloutStore{Pods: map[string]*podRollout{}}
	rs.init(stateDir, RolloutsFile, clk)
	rs.sealer = sealer
	rs.holds.init(stateDir, HoldsFile, clk)
	rs.load(func(b []byte) error {
		pods, err := decodeRollouts(b, log)
		if err == nil {
			rs.Pods = pods
		}
		return err
	}, func() { rs.Pods = map[string]*podRollout{} })
	rs.holds.load(func(b []byte) error {
		holds, err := decodeHolds(b)
		for id, h := range holds {
			rs.get(id).Hold = h
		}
		return err
	}, func() {})
	return rs
}

// decodeRollouts decodes the content of a rollouts file, refusing what is
// not one. An entry whose kept version does not hash as recorded (written
// by another hash version) loses that version only: its pod has nothing
// to roll back to until it is ready again.
func decodeRollouts(b []byte, log *slog.Logger) (map[string]*podRollout, error) {
	var saved struct {
		Pods map[string]*podRollout `json:"pods"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("decode rollouts: %w", err)
	}
	if saved.Pods == nil {
		return nil, errors.New("decode rollouts: no pods")
	}
	for id, r := range saved.Pods {
		switch {
		case r == nil:
			delete(saved.Pods, id)
		case r.Good != nil && (r.Good.Manifest.ID != id || len(r.Good.Manifest.Containers) == 0 || r.Good.Hash != manifest.PodHash(r.Good.Manifest)):
			if log != nil {
				log.Warn("the kept last ready version of a pod does not hash as recorded; the pod has none until it is ready again", "pod", id)
			}
			r.Good = nil
		}
	}
	return saved.Pods, nil
}

// decodeHolds decodes the content of a holds file.
func decodeHolds(b []byte) (map[string]*Hold, error) {
	var saved savedHolds
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("decode holds: %w", err)
	}
	if saved.Pods == nil {
		return nil, errors.New("decode holds: no pods")
	}
	for id, h := range saved.Pods {
		if h == nil || len(id) > 253 || !podIDRE.MatchString(id) {
			return nil, fmt.Errorf("decode holds: %q is not a hold of a pod", id)
		}
	}
	return saved.Pods, nil
}

// get returns the pod's rollout, made when absent.
func (rs *rolloutStore) get(id string) *podRollout {
	r := rs.Pods[id]
	if r == nil {
		r = &podRollout{}
		rs.Pods[id] = r
	}
	return r
}

// holdsChanged marks the holds to be saved.
func (rs *rolloutStore) holdsChanged() {
	rs.holds.dirty = true
}

// rolloutSnapshot is both files as of one snapshot.
type rolloutSnapshot struct {
	rollouts, holds *stateSnapshot
}

// snapshot encodes what changed of the rollouts and holds (see
// stateFile.snapshot).
func (rs *rolloutStore) snapshot() rolloutSnapshot {
	snap := rolloutSnapshot{rollouts: rs.stateFile.snapshot(rs)}
	if rs.holds.path != "" && (rs.holds.dirty || rs.holds.retry.Load()) {
		held := savedHolds{Pods: map[string]*Hold{}}
		for id, r := range rs.Pods {
			if r.Hold != nil {
				held.Pods[id] = r.Hold
			}
		}
		snap.holds = rs.holds.snapshot(held)
	}
	return snap
}

// write saves a snapshot: the holds first (the operator's lock).
func (rs *rolloutStore) write(snap rolloutSnapshot) error {
	return errors.Join(rs.holds.write(snap.holds), rs.stateFile.write(snap.rollouts))
}

// ReadStateSealer returns the sealer of the state files a hostlet with
// stateDir seals (RolloutsFile), from its env hash key, never creating or
// changing the key.
func ReadStateSealer(stateDir string) (*seal.Sealer, error) {
	h, err := ReadEnvHasher(stateDir)
	if err != nil {
		return nil, err
	}
	return h.stateSealer()
}

// ReadRollouts reads the rollouts and holds a hostlet saved under
// stateDir, as its status shows them, by pod ID (hostlet diff shows what
// is held back or held). No files are no rollouts; one that cannot be
// read (the rollouts need the host's env hash key) is an error.
func ReadRollouts(stateDir string) (map[string]Rollout, error) {
	out := map[string]Rollout{}
	b, err := os.ReadFile(filepath.Join(stateDir, RolloutsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read rollouts: %w", err)
	default:
		sl, err := ReadStateSealer(stateDir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", filepath.Join(stateDir, RolloutsFile), err)
		}
		if b, err = sl.Open(b, RolloutsFile); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(stateDir, RolloutsFile), err)
		}
		pods, err := decodeRollouts(b, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(stateDir, RolloutsFile), err)
		}
		for id, r := range pods {
			ro := r.Rollout
			if r.Bad != nil {
				ro = Rollout{State: RolloutRolledBack, Revision: r.Bad.Revision, Hash: r.Bad.Hash, Since: r.Bad.At, Reason: r.Bad.Reason}
			}
			out[id] = ro
		}
	}
	b, err = os.ReadFile(filepath.Join(stateDir, HoldsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("read holds: %w", err)
	}
	holds, err := decodeHolds(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(stateDir, HoldsFile), err)
	}
	for id, h := range holds {
		ro := out[id]
		out[id] = Rollout{State: RolloutHeld, Revision: ro.Revision, Hash: ro.Hash, PreviousHash: ro.PreviousHash, Since: h.Since, Reason: h.Reason, Hold: h}
	}
	return out, nil
}
