package sync

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/manifest"
)

// RolloutsFile is the file under stateDir holding every pod's rollout:
// its state, the last version that was ready (the whole desired pod, its
// files included: what a rollback restores, also after a restart), the
// version held back, and an operator's hold.
const RolloutsFile = "rollouts.json"

// rolloutStore keeps the pods' rollouts and saves them; guarded by the
// Syncer's mu.
type rolloutStore struct {
	stateFile
	Pods map[string]*podRollout `json:"pods"`
}

func loadRollouts(stateDir string, clk clock.Clock) *rolloutStore {
	rs := &rolloutStore{Pods: map[string]*podRollout{}}
	rs.init(stateDir, RolloutsFile, clk)
	rs.load(func(b []byte) error {
		pods, err := decodeRollouts(b)
		if err == nil {
			rs.Pods = pods
		}
		return err
	}, func() { rs.Pods = map[string]*podRollout{} })
	return rs
}

// decodeRollouts decodes a rollouts file, refusing what is not one: a
// kept version must be a valid pod of the ID it is kept for.
func decodeRollouts(b []byte) (map[string]*podRollout, error) {
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
			return nil, fmt.Errorf("decode rollouts: pod %q: null", id)
		case r.Good != nil && (r.Good.Manifest.ID != id || len(r.Good.Manifest.Containers) == 0 || r.Good.Hash != manifest.PodHash(r.Good.Manifest)):
			// A version that does not hash as recorded was not written
			// by hostlet: never restore it.
			return nil, fmt.Errorf("decode rollouts: pod %q: the kept version is not the pod it names", id)
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

// snapshot encodes the rollouts to save (see stateFile.snapshot).
func (rs *rolloutStore) snapshot() *stateSnapshot { return rs.stateFile.snapshot(rs) }

// ReadRollouts reads the rollouts a hostlet saved under stateDir, as its
// status shows them, by pod ID (hostlet diff shows what is held back or
// held). No file is no rollouts; a damaged one is an error.
func ReadRollouts(stateDir string) (map[string]Rollout, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, RolloutsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Rollout{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read rollouts: %w", err)
	}
	pods, err := decodeRollouts(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(stateDir, RolloutsFile), err)
	}
	out := make(map[string]Rollout, len(pods))
	for id, r := range pods {
		ro := r.Rollout
		if r.Hold != nil {
			ro = Rollout{State: RolloutHeld, Revision: ro.Revision, Hash: ro.Hash, PreviousHash: ro.PreviousHash, Since: r.Hold.Since, Reason: r.Hold.Reason, Hold: r.Hold}
		} else if r.Bad != nil {
			ro = Rollout{State: RolloutRolledBack, Revision: r.Bad.Revision, Hash: r.Bad.Hash, Since: r.Bad.At, Reason: r.Bad.Reason}
		}
		out[id] = ro
	}
	return out, nil
}
