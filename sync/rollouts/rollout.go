// Package rollouts is the rollout state machine of hostlet's pods and its
// store: where each pod's update stands (Progressing, Complete,
// RolledBack, Held), the last version that was ready (what a rollback
// restores), the versions held back and the operators' holds, saved under
// stateDir (rollouts.json sealed, holds.json plain), and the pods being
// applied now (a hold waits for them). A Store has its own lock; package
// sync observes the engine and asks the Store to step.
package rollouts

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
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
	// Images are, for RolledBack, the images of the version held back,
	// by container: `hostlet images` does not move a repository to them
	// again.
	Images map[string]string `json:"images,omitempty"`
	// RolledBackBefore are the pod's versions rolled back earlier and no
	// longer held back (its manifest changed since), newest last, at most
	// MaxRolledBackBefore: `hostlet images` does not propose them again
	// either. Set by Store.Shown only.
	RolledBackBefore []PastRollback `json:"rolledBackBefore,omitempty"`
}

// PastRollback is a version of a pod rolled back earlier.
type PastRollback struct {
	Revision string            `json:"revision"`
	Reason   string            `json:"reason"`
	At       time.Time         `json:"at"`
	Images   map[string]string `json:"images,omitempty"`
}

// MaxRolledBackBefore bounds the earlier rollbacks kept for each pod.
const MaxRolledBackBefore = 5

// remember adds bad to the earlier rollbacks past, keeping the newest
// MaxRolledBackBefore.
func remember(past []*badVersion, bad *badVersion) []*badVersion {
	b := *bad
	cleanBad(&b)
	b.Reason = textcap.Truncate(b.Reason, 512)
	past = append(past, &b)
	if n := len(past); n > MaxRolledBackBefore {
		past = past[n-MaxRolledBackBefore:]
	}
	return past
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
func (v *version) pod() podspec.Pod {
	return podspec.Pod{Manifest: v.Manifest, Source: v.Source, Revision: v.Revision, Hidden: v.Hidden}
}

// badVersion is a version of a pod that failed: not applied again until
// the pod's manifest changes.
type badVersion struct {
	Hash     string    `json:"hash"`
	Revision string    `json:"revision"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
	// Images are its containers' images (Rollout.Images).
	Images map[string]string `json:"images,omitempty"`
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
	// Past are the versions rolled back earlier (Rollout.RolledBackBefore),
	// saved apart (HoldsFile).
	Past []*badVersion `json:"-"`
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

// Observation is what a sync saw of a pod, as the rollout state machine
// takes it.
type Observation struct {
	Now time.Time
	// Pod is the desired version, Hash its PodHash.
	Pod      podspec.Pod
	Hash     string
	Revision string
	// Policy is the manifest's rollback policy; MinReady and Deadline its
	// minReadySeconds and progressDeadlineSeconds (see Settings).
	Policy             string
	MinReady, Deadline time.Duration
	// Applied: the desired version has been applied (see podRollout.Applied).
	Applied bool
	// Ready: every container of the desired version runs (or is done, as
	// its restart policy allows) and passes its readiness signals;
	// StartedAt is the latest start of one of them.
	Ready     bool
	StartedAt time.Time
	// Failure says why the desired version failed outright ("" when it
	// has not): a crash loop, a start error, an unhealthy healthcheck.
	Failure string
	// NotReady says why it is not ready, for a deadline's reason.
	NotReady string
}

// Outcome is what a step decided beyond the state it left.
type Outcome int

const (
	// OutcomeNone: nothing to tell.
	OutcomeNone Outcome = iota
	// OutcomeStarted: a new version began (its crash records are stale).
	OutcomeStarted
	// OutcomeComplete: the desired version has been ready minReadySeconds.
	OutcomeComplete
	// OutcomeRolledBack: the desired version failed; the last good one
	// is to be restored.
	OutcomeRolledBack
	// OutcomeFailed: the desired version failed and stays (rollback Never,
	// or nothing to return to).
	OutcomeFailed
	// OutcomeHeld: the desired version failed and the pod is now held
	// (rollback Hold).
	OutcomeHeld
)

// step advances the pod's rollout by what one sync saw and returns what
// it decided. It is pure apart from r: every transition is a table test.
func (r *podRollout) step(o Observation) Outcome {
	if r.Hold != nil {
		r.Rollout = Rollout{State: RolloutHeld, Revision: r.Rollout.Revision, Hash: r.Rollout.Hash, PreviousHash: r.Rollout.PreviousHash,
			Since: r.Hold.Since, Reason: r.Hold.Reason, Hold: r.Hold}
		r.readySince = time.Time{}
		return OutcomeNone
	}
	if r.Bad != nil && r.Bad.Hash == o.Hash {
		// Held back: the last good version runs instead.
		r.Rollout = Rollout{State: RolloutRolledBack, Revision: r.Bad.Revision, Hash: r.Bad.Hash, Since: r.Bad.At, Reason: r.Bad.Reason, Images: r.Bad.Images}
		if r.Good != nil {
			r.Rollout.PreviousHash = r.Good.Hash
		}
		return OutcomeNone
	}
	if r.Bad != nil {
		// The manifest changed: the version is no longer held back,
		// but `hostlet images` must still not propose it again.
		r.Past = remember(r.Past, r.Bad)
	}
	r.Bad = nil
	started := OutcomeNone
	if r.Rollout.Hash != o.Hash || r.Rollout.State == RolloutHeld || r.Rollout.State == RolloutRolledBack {
		prev := ""
		if r.Good != nil {
			prev = r.Good.Hash
		}
		r.Rollout = Rollout{State: RolloutProgressing, Revision: o.Revision, Hash: o.Hash, PreviousHash: prev, Since: o.Now}
		r.Applied, r.Failed, r.readySince = time.Time{}, false, time.Time{}
		started = OutcomeStarted
	}
	r.Rollout.Revision = o.Revision
	if r.Rollout.State == RolloutComplete || r.Failed {
		return started
	}
	if o.Applied && r.Applied.IsZero() {
		r.Applied = o.Now
	}
	if started != OutcomeNone {
		// What was seen of the pod before this version began (crashes of
		// a version held or released) does not count against it.
		return started
	}
	if !o.Ready {
		r.readySince = time.Time{}
	} else if r.readySince.IsZero() || o.StartedAt.After(r.readySince) {
		// Ready from when it is first seen ready, and again from now
		// when a container of it started in between (a crash the
		// engine restarted).
		r.readySince = o.Now
	}
	switch {
	case r.Applied.IsZero():
		// Images being pulled or built: the old version runs untouched.
		r.Rollout.Reason = ""
		return started
	case o.Ready && o.Now.Sub(r.readySince) >= o.MinReady:
		r.Rollout.State, r.Rollout.Since, r.Rollout.Reason = RolloutComplete, o.Now, ""
		r.Good = &version{Hash: o.Hash, Source: o.Pod.Source, Revision: o.Pod.Revision, Manifest: o.Pod.Manifest, Hidden: o.Pod.Hidden}
		return OutcomeComplete
	case o.Failure != "":
		return r.fail(o, o.Failure)
	case o.Now.Sub(r.Applied) >= o.Deadline:
		why := fmt.Sprintf("not ready within progressDeadlineSeconds (%s)", o.Deadline)
		if o.NotReady != "" {
			why += ": " + o.NotReady
		}
		return r.fail(o, why)
	}
	r.Rollout.Reason = o.NotReady
	if o.Ready {
		r.Rollout.Reason = fmt.Sprintf("ready; complete after %s ready", o.MinReady)
	}
	return started
}

// fail ends the desired version's rollout, per the pod's rollback policy.
func (r *podRollout) fail(o Observation, why string) Outcome {
	switch {
	case o.Policy == manifest.RollbackHold:
		r.Hold = &Hold{By: "hostlet", Reason: "update failed: " + why + " (rollback: Hold)", Since: o.Now}
		r.Rollout = Rollout{State: RolloutHeld, Revision: o.Revision, Hash: o.Hash, PreviousHash: r.Rollout.PreviousHash,
			Since: o.Now, Reason: r.Hold.Reason, Hold: r.Hold}
		return OutcomeHeld
	case o.Policy == manifest.RollbackNever:
		r.Failed, r.Rollout.Reason = true, why+" (rollback: Never)"
		return OutcomeFailed
	case r.Good == nil || r.Good.Hash == o.Hash:
		r.Failed, r.Rollout.Reason = true, why+" (no earlier ready version to roll back to)"
		return OutcomeFailed
	}
	r.Bad = &badVersion{Hash: o.Hash, Revision: o.Revision, Reason: why, At: o.Now, Images: imagesOf(o.Pod.Manifest)}
	r.Rollout = Rollout{State: RolloutRolledBack, Revision: o.Revision, Hash: o.Hash, PreviousHash: r.Good.Hash, Since: o.Now, Reason: why, Images: r.Bad.Images}
	r.Applied, r.readySince = time.Time{}, time.Time{}
	return OutcomeRolledBack
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

// Settings are m's minReadySeconds, progressDeadlineSeconds and
// rollback policy, their defaults where m leaves them out.
func Settings(m manifest.Manifest) (minReady, deadline time.Duration, policy string) {
	minReady, deadline, policy = manifest.Seconds(m.MinReadySeconds), manifest.Seconds(m.ProgressDeadlineSeconds), m.Rollback
	if m.MinReadySeconds == 0 {
		minReady = manifest.DefaultMinReadySeconds * time.Second
	}
	if m.ProgressDeadlineSeconds == 0 {
		deadline = manifest.DefaultProgressDeadlineSeconds * time.Second
	}
	if policy == "" {
		policy = manifest.RollbackAuto
	}
	return minReady, deadline, policy
}

// imagesOf are the images of m's containers and init containers, by container.
func imagesOf(m manifest.Manifest) map[string]string {
	out := make(map[string]string, len(m.Containers))
	for _, c := range slices.Concat(m.Containers, m.InitContainers) {
		out[c.Name] = c.Image
	}
	return out
}

// same reports whether r and o say the same (Images compared by content).
func (r Rollout) same(o Rollout) bool {
	return r.State == o.State && r.Revision == o.Revision && r.Hash == o.Hash && r.PreviousHash == o.PreviousHash &&
		r.Since.Equal(o.Since) && r.Since.Location() == o.Since.Location() && r.Reason == o.Reason && r.Hold == o.Hold &&
		maps.Equal(r.Images, o.Images)
}
