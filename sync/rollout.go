package sync

import (
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/sync/rollouts"
)

// The rollout state machine and its store live in sync/rollouts; these
// names keep the ones sync has always offered (the status document shows
// Rollout and Hold).

// Rollout is where a pod's update stands (status pods[].rollout).
type Rollout = rollouts.Rollout

// Hold is an operator's hold on a pod.
type Hold = rollouts.Hold

// Rollout states, as the status shows them (pod.rollout.state).
const (
	RolloutProgressing = rollouts.RolloutProgressing
	RolloutComplete    = rollouts.RolloutComplete
	RolloutRolledBack  = rollouts.RolloutRolledBack
	RolloutHeld        = rollouts.RolloutHeld
)

// The rollouts' files under stateDir, and the bounds on holds.
const (
	RolloutsFile      = rollouts.RolloutsFile
	HoldsFile         = rollouts.HoldsFile
	MaxHoldsFileBytes = rollouts.MaxHoldsFileBytes
	MaxHolds          = rollouts.MaxHolds
	MaxHoldText       = rollouts.MaxHoldText
)

// ErrNotHeld is Release's error for a pod that is not held.
var ErrNotHeld = rollouts.ErrNotHeld

// ReadRollouts reads the rollouts and holds a hostlet saved under
// stateDir, as its status shows them, by pod ID (rollouts.ReadRollouts).
func ReadRollouts(stateDir string) (map[string]Rollout, error) {
	return rollouts.ReadRollouts(stateDir)
}

// ReadStateSealer returns the sealer of the state files a hostlet with
// stateDir seals, never creating or changing its key
// (rollouts.ReadStateSealer).
func ReadStateSealer(stateDir string) (*seal.Sealer, error) {
	return rollouts.ReadStateSealer(stateDir)
}
