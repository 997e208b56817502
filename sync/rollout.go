package sync

import (
	"fmt"
	"time"

	"github.com/hostlet/hostlet/manifest"
)

// Rollout states, as the status shows them (pod.rollout.state).
const (
	// RolloutProgressing: the pod's current version is being applied, or
	// runs and has not been ready minReadySeconds yet.
	RolloutProgressing = "Progressing"
	// RolloutComplete: the pod's current version has been ready
	// minReadySeconds; it is the version a later failed update returns to.
	RolloutComplete = "Complete"
	// RolloutRolledBack: the pod's current version failed and the last
	// version that was ready runs instead, until the manifest changes again.
	RolloutRolledBack = "RolledBack"
	// RolloutHeld: an operator (or a failed update of a pod with rollback:
	// Hold) holds the pod: hostlet leaves it exactly as it is.
	RolloutHeld = "Held"
)

// Rollout is where a pod's update stands (status pods[].rollout).
type Rollout struct {
	State string `json:"state"`
	// Revision and Hash name the version the state is about (for
	// RolledBack, the version held back); PreviousHash the version that
	// was ready before it ("" for a new pod).
	Revision     string    `json:"revision,omitempty"`
	Hash         string    `json:"hash,omitempty"`
	PreviousHash string    `json:"previousHash,omitempty"`
	Since        time.Time `json:"since"`
	Reason       string    `json:"reason,omitempty"`
	// Hold says who holds the pod, why and since when (state Held).
	Hold *Hold `json:"hold,omitempty"`
}

// Hold is an operator's hold on a pod: hostlet neither recreates,
// removes nor starts it until it is released.
type Hold struct {
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
	Since  time.Time `json:"since"`
}

// version is a version of a pod that was ready: what a rollback restores.
type version struct {
	Hash     string            `json:"hash"`
	Source   string            `json:"source"`
	Revision string            `json:"revision"`
	Manifest manifest.Manifest `json:"manifest"`
	// Hidden are the pod's interpolated values (Pod.Hidden).
	Hidden []string `json:"hidden,omitempty"`
}

// pod returns the desired pod of the version.
func (v *version) pod() Pod {
	return Pod{Manifest: v.Manifest, Source: v.Source, Revision: v.Revision, Hidden: v.Hidden}
}

// badVersion is a version of a pod that failed: not applied again until
// the pod's manifest changes.
type badVersion struct {
	Hash     string    `json:"hash"`
	Revision string    `json:"revision"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// podRollout is what the syncer keeps of one pod's updates; the exported
// fields are saved under stateDir (rollouts.json).
type podRollout struct {
	Rollout Rollout `json:"rollout"`
	// Applied is when the version of Rollout.Hash was first applied (its
	// containers created, or the old ones taken down): its progress
	// deadline counts from then. Zero while its images are pulled or
	// built: the old version runs untouched meanwhile.
	Applied time.Time `json:"applied,omitzero"`
	Good    *version  `json:"good,omitempty"`
	// Bad is saved apart (HoldsFile): it holds no secret, and must
	// survive the loss of the sealed file (a lost key), or the version
	// held back would be applied again.
	Bad *badVersion `json:"-"`
	// Hold is saved apart (HoldsFile).
	Hold *Hold `json:"-"`
	// Failed: the version of Rollout.Hash failed and stays (rollback
	// Never, or nothing to return to); said once.
	Failed bool `json:"failed,omitempty"`

	// readySince is when the pod was last seen becoming ready (zero while
	// it is not); not saved: a restarted hostlet counts minReadySeconds
	// from when it sees the pod ready.
	readySince time.Time
	// unrestorable says why the last ready version is not restored (the
	// host's policy no longer allows it, or it is not known); "" when it
	// is. checkedGood is the hash of the kept version last checked
	// against the policy.
	unrestorable, checkedGood string
}

// observation is what a sync saw of a pod, as the rollout state machine
// takes it.
type observation struct {
	now time.Time
	// pod is the desired version, hash its PodHash.
	pod      Pod
	hash     string
	revision string
	// policy is the manifest's rollback policy; minReady and deadline its
	// minReadySeconds and progressDeadlineSeconds.
	policy             string
	minReady, deadline time.Duration
	// applied: the desired version has been applied (see podRollout.Applied).
	applied bool
	// ready: every container of the desired version runs (or is done, as
	// its restart policy allows) and passes its readiness signals;
	// startedAt is the latest start of one of them.
	ready     bool
	startedAt time.Time
	// failure says why the desired version failed outright ("" when it
	// has not): a crash loop, a start error, an unhealthy healthcheck.
	failure string
	// notReady says why it is not ready, for a deadline's reason.
	notReady string
}

// outcome is what a step decided beyond the state it left.
type outcome int

const (
	outcomeNone outcome = iota
	// outcomeStarted: a new version began (its crash records are stale).
	outcomeStarted
	// outcomeComplete: the desired version has been ready minReadySeconds.
	outcomeComplete
	// outcomeRolledBack: the desired version failed; the last good one
	// is to be restored.
	outcomeRolledBack
	// outcomeFailed: the desired version failed and stays (rollback Never,
	// or nothing to return to).
	outcomeFailed
	// outcomeHeld: the desired version failed and the pod is now held
	// (rollback Hold).
	outcomeHeld
)

// step advances the pod's rollout by what one sync saw and returns what
// it decided. It is pure apart from r: every transition is a table test.
func (r *podRollout) step(o observation) outcome {
	if r.Hold != nil {
		r.Rollout = Rollout{State: RolloutHeld, Revision: r.Rollout.Revision, Hash: r.Rollout.Hash, PreviousHash: r.Rollout.PreviousHash,
			Since: r.Hold.Since, Reason: r.Hold.Reason, Hold: r.Hold}
		r.readySince = time.Time{}
		return outcomeNone
	}
	if r.Bad != nil && r.Bad.Hash == o.hash {
		// Held back: the last good version runs instead.
		r.Rollout = Rollout{State: RolloutRolledBack, Revision: r.Bad.Revision, Hash: r.Bad.Hash, Since: r.Bad.At, Reason: r.Bad.Reason}
		if r.Good != nil {
			r.Rollout.PreviousHash = r.Good.Hash
		}
		return outcomeNone
	}
	r.Bad = nil
	started := outcomeNone
	if r.Rollout.Hash != o.hash || r.Rollout.State == RolloutHeld || r.Rollout.State == RolloutRolledBack {
		prev := ""
		if r.Good != nil {
			prev = r.Good.Hash
		}
		r.Rollout = Rollout{State: RolloutProgressing, Revision: o.revision, Hash: o.hash, PreviousHash: prev, Since: o.now}
		r.Applied, r.Failed, r.readySince = time.Time{}, false, time.Time{}
		started = outcomeStarted
	}
	r.Rollout.Revision = o.revision
	if r.Rollout.State == RolloutComplete || r.Failed {
		return started
	}
	if o.applied && r.Applied.IsZero() {
		r.Applied = o.now
	}
	if started != outcomeNone {
		// What was seen of the pod before this version began (crashes of
		// a version held or released) does not count against it.
		return started
	}
	if !o.ready {
		r.readySince = time.Time{}
	} else if r.readySince.IsZero() || o.startedAt.After(r.readySince) {
		// Ready from when it is first seen ready, and again from now
		// when a container of it started in between (a crash the
		// engine restarted).
		r.readySince = o.now
	}
	switch {
	case r.Applied.IsZero():
		// Images being pulled or built: the old version runs untouched.
		r.Rollout.Reason = ""
		return started
	case o.ready && o.now.Sub(r.readySince) >= o.minReady:
		r.Rollout.State, r.Rollout.Since, r.Rollout.Reason = RolloutComplete, o.now, ""
		r.Good = &version{Hash: o.hash, Source: o.pod.Source, Revision: o.pod.Revision, Manifest: o.pod.Manifest, Hidden: o.pod.Hidden}
		return outcomeComplete
	case o.failure != "":
		return r.fail(o, o.failure)
	case o.now.Sub(r.Applied) >= o.deadline:
		why := fmt.Sprintf("not ready within progressDeadlineSeconds (%s)", o.deadline)
		if o.notReady != "" {
			why += ": " + o.notReady
		}
		return r.fail(o, why)
	}
	r.Rollout.Reason = o.notReady
	if o.ready {
		r.Rollout.Reason = fmt.Sprintf("ready; complete after %s ready", o.minReady)
	}
	return started
}

// fail ends the desired version's rollout, per the pod's rollback policy.
func (r *podRollout) fail(o observation, why string) outcome {
	switch {
	case o.policy == manifest.RollbackHold:
		r.Hold = &Hold{By: "hostlet", Reason: "update failed: " + why + " (rollback: Hold)", Since: o.now}
		r.Rollout = Rollout{State: RolloutHeld, Revision: o.revision, Hash: o.hash, PreviousHash: r.Rollout.PreviousHash,
			Since: o.now, Reason: r.Hold.Reason, Hold: r.Hold}
		return outcomeHeld
	case o.policy == manifest.RollbackNever:
		r.Failed, r.Rollout.Reason = true, why+" (rollback: Never)"
		return outcomeFailed
	case r.Good == nil || r.Good.Hash == o.hash:
		r.Failed, r.Rollout.Reason = true, why+" (no earlier ready version to roll back to)"
		return outcomeFailed
	}
	r.Bad = &badVersion{Hash: o.hash, Revision: o.revision, Reason: why, At: o.now}
	r.Rollout = Rollout{State: RolloutRolledBack, Revision: o.revision, Hash: o.hash, PreviousHash: r.Good.Hash, Since: o.now, Reason: why}
	r.Applied, r.readySince = time.Time{}, time.Time{}
	return outcomeRolledBack
}

// due is when the rollout next needs a look without any event (its
// minReadySeconds or its deadline passing); zero for none.
func (r *podRollout) due(minReady, deadline time.Duration) time.Time {
	if r.Hold != nil || r.Failed || r.Rollout.State != RolloutProgressing || r.Applied.IsZero() {
		return time.Time{}
	}
	d := r.Applied.Add(deadline)
	if !r.readySince.IsZero() && r.readySince.Add(minReady).Before(d) {
		d = r.readySince.Add(minReady)
	}
	return d
}
