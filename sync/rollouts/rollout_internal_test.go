package rollouts

import (
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
)

// TestRolloutStep covers every transition of the rollout state machine.
func TestRolloutStep(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	good := &version{Hash: "v1:good", Revision: "r1", Source: "fleet", Manifest: manifest.Manifest{ID: "web"}}
	pod := podspec.Pod{Manifest: manifest.Manifest{ID: "web"}, Source: "fleet", Revision: "r2"}
	obs := func(mod func(*Observation)) Observation {
		o := Observation{Now: t0, Pod: pod, Hash: "v1:new", Revision: "r2", Policy: manifest.RollbackAuto,
			MinReady: 10 * time.Second, Deadline: 300 * time.Second}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	progressing := func(applied time.Time) *podRollout {
		return &podRollout{Good: good, Applied: applied,
			Rollout: Rollout{State: RolloutProgressing, Hash: "v1:new", PreviousHash: "v1:good", Revision: "r2", Since: t0.Add(-time.Minute)}}
	}
	tests := []struct {
		name   string
		r      *podRollout
		o      Observation
		want   Outcome
		state  string
		reason string // a substring of the rollout's reason
		check  func(t *testing.T, r *podRollout)
	}{
		{
			name: "a new pod starts progressing", r: &podRollout{}, o: obs(nil),
			want: OutcomeStarted, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if r.Rollout.PreviousHash != "" || !r.Applied.IsZero() {
					t.Errorf("previousHash %q applied %v, want none", r.Rollout.PreviousHash, r.Applied)
				}
			},
		},
		{
			name: "a changed pod progresses from its good version", r: &podRollout{Good: good, Rollout: Rollout{State: RolloutComplete, Hash: "v1:good"}},
			o: obs(func(o *Observation) { o.Applied = true }), want: OutcomeStarted, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if r.Rollout.PreviousHash != "v1:good" || !r.Applied.Equal(t0) || r.Rollout.Since != t0 {
					t.Errorf("rollout %+v applied %v, want previous v1:good, applied and since now", r.Rollout, r.Applied)
				}
			},
		},
		{
			name: "waiting for its images, no deadline runs", r: progressing(time.Time{}),
			o: obs(func(o *Observation) { o.Now = t0.Add(time.Hour); o.Failure = "ErrImagePull: no such image" }), want: OutcomeNone, state: RolloutProgressing,
		},
		{
			name: "applied and not ready before the deadline", r: progressing(t0.Add(-time.Minute)),
			o:    obs(func(o *Observation) { o.Applied = true; o.NotReady = "container app: readiness probe not passing" }),
			want: OutcomeNone, state: RolloutProgressing, reason: "readiness probe not passing",
		},
		{
			name: "ready, not yet for minReadySeconds", r: progressing(t0.Add(-time.Minute)),
			o: obs(func(o *Observation) { o.Applied, o.Ready = true, true }), want: OutcomeNone, state: RolloutProgressing, reason: "complete after",
			check: func(t *testing.T, r *podRollout) {
				if !r.readySince.Equal(t0) || !r.due(10*time.Second, 300*time.Second).Equal(t0.Add(10*time.Second)) {
					t.Errorf("readySince %v due %v, want now and now+10s", r.readySince, r.due(10*time.Second, 300*time.Second))
				}
			},
		},
		{
			name: "ready for minReadySeconds completes and becomes the good version",
			r: func() *podRollout {
				r := progressing(t0.Add(-time.Minute))
				r.readySince = t0.Add(-10 * time.Second)
				return r
			}(),
			o: obs(func(o *Observation) { o.Applied, o.Ready = true, true }), want: OutcomeComplete, state: RolloutComplete,
			check: func(t *testing.T, r *podRollout) {
				if r.Good == nil || r.Good.Hash != "v1:new" || r.Good.Revision != "r2" || r.Good.Manifest.ID != "web" {
					t.Errorf("good %+v, want the new version", r.Good)
				}
				if !r.due(10*time.Second, 300*time.Second).IsZero() {
					t.Error("a complete rollout is due again")
				}
			},
		},
		{
			name: "a restart in between counts minReadySeconds again",
			r: func() *podRollout {
				r := progressing(t0.Add(-time.Minute))
				r.readySince = t0.Add(-30 * time.Second)
				return r
			}(),
			o:    obs(func(o *Observation) { o.Applied, o.Ready, o.StartedAt = true, true, t0.Add(-5*time.Second) }),
			want: OutcomeNone, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if !r.readySince.Equal(t0) {
					t.Errorf("readySince %v, want now", r.readySince)
				}
			},
		},
		{
			name: "not ready forgets when it was ready",
			r: func() *podRollout {
				r := progressing(t0.Add(-time.Minute))
				r.readySince = t0.Add(-5 * time.Second)
				return r
			}(),
			o: obs(func(o *Observation) { o.Applied = true }), want: OutcomeNone, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if !r.readySince.IsZero() {
					t.Errorf("readySince %v, want zero", r.readySince)
				}
			},
		},
		{
			name: "a failure rolls back to the good version", r: progressing(t0.Add(-time.Minute)),
			o:    obs(func(o *Observation) { o.Applied, o.Failure = true, "container app keeps crashing (CrashLoopBackOff)" }),
			want: OutcomeRolledBack, state: RolloutRolledBack, reason: "keeps crashing",
			check: func(t *testing.T, r *podRollout) {
				if r.Bad == nil || r.Bad.Hash != "v1:new" || r.Bad.Revision != "r2" || r.Rollout.PreviousHash != "v1:good" || r.Good != good {
					t.Errorf("bad %+v rollout %+v, want the new version held back and the good one kept", r.Bad, r.Rollout)
				}
			},
		},
		{
			name: "the deadline rolls back", r: progressing(t0.Add(-300 * time.Second)),
			o:    obs(func(o *Observation) { o.Applied, o.NotReady = true, "container app: healthcheck starting" }),
			want: OutcomeRolledBack, state: RolloutRolledBack, reason: "not ready within progressDeadlineSeconds (5m0s): container app: healthcheck starting",
		},
		{
			name: "rollback Never leaves it failing, once", r: progressing(t0.Add(-time.Minute)),
			o: obs(func(o *Observation) {
				o.Applied, o.Failure, o.Policy = true, "container app exited (1)", manifest.RollbackNever
			}),
			want: OutcomeFailed, state: RolloutProgressing, reason: "(rollback: Never)",
			check: func(t *testing.T, r *podRollout) {
				if r.Bad != nil || !r.Failed {
					t.Errorf("bad %+v failed %v, want nothing held back and the failure kept", r.Bad, r.Failed)
				}
				if out := r.step(obs(func(o *Observation) { o.Applied, o.Failure, o.Policy = true, "again", manifest.RollbackNever })); out != OutcomeNone {
					t.Errorf("a second step: %v, want nothing new", out)
				}
			},
		},
		{
			name: "rollback Hold holds the pod", r: progressing(t0.Add(-time.Minute)),
			o: obs(func(o *Observation) {
				o.Applied, o.Failure, o.Policy = true, "container app is unhealthy", manifest.RollbackHold
			}),
			want: OutcomeHeld, state: RolloutHeld, reason: "update failed: container app is unhealthy",
			check: func(t *testing.T, r *podRollout) {
				if r.Hold == nil || r.Hold.By != "hostlet" || r.Rollout.Hold != r.Hold {
					t.Errorf("hold %+v, want one by hostlet", r.Hold)
				}
			},
		},
		{
			name: "a new pod that fails has nothing to return to",
			r:    &podRollout{Applied: t0.Add(-time.Minute), Rollout: Rollout{State: RolloutProgressing, Hash: "v1:new", Revision: "r2"}},
			o:    obs(func(o *Observation) { o.Applied, o.Failure = true, "StartError: port taken" }),
			want: OutcomeFailed, state: RolloutProgressing, reason: "no earlier ready version",
		},
		{
			name: "the held back version stays held back",
			r:    &podRollout{Good: good, Bad: &badVersion{Hash: "v1:new", Revision: "r2", Reason: "crash", At: t0.Add(-time.Hour)}, Rollout: Rollout{State: RolloutRolledBack, Hash: "v1:new"}},
			o:    obs(func(o *Observation) { o.Applied, o.Failure = true, "whatever the restored version does" }),
			want: OutcomeNone, state: RolloutRolledBack, reason: "crash",
		},
		{
			name: "a held back version is restored after a restart too",
			r:    &podRollout{Good: good, Bad: &badVersion{Hash: "v1:new", Revision: "r2", Reason: "crash", At: t0.Add(-time.Hour)}},
			o:    obs(nil), want: OutcomeNone, state: RolloutRolledBack,
			check: func(t *testing.T, r *podRollout) {
				if r.Rollout.PreviousHash != "v1:good" || !r.Rollout.Since.Equal(t0.Add(-time.Hour)) {
					t.Errorf("rollout %+v, want since the rollback, previous the good version", r.Rollout)
				}
			},
		},
		{
			name: "a later commit is tried",
			r:    &podRollout{Good: good, Bad: &badVersion{Hash: "v1:new", Revision: "r2", Reason: "crash"}, Rollout: Rollout{State: RolloutRolledBack, Hash: "v1:new"}},
			o:    obs(func(o *Observation) { o.Hash, o.Revision = "v1:newer", "r3" }), want: OutcomeStarted, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if r.Bad != nil || r.Rollout.Hash != "v1:newer" || r.Rollout.PreviousHash != "v1:good" {
					t.Errorf("bad %+v rollout %+v, want the new commit progressing from the good version", r.Bad, r.Rollout)
				}
			},
		},
		{
			name: "an operator's hold", r: progressing(t0.Add(-time.Hour)),
			o: obs(func(o *Observation) { o.Applied, o.Failure = true, "crash" }), want: OutcomeNone, state: RolloutHeld, reason: "debugging",
			check: func(t *testing.T, r *podRollout) {
				if r.Bad != nil {
					t.Error("a held pod was rolled back")
				}
			},
		},
		{
			name: "a release starts the rollout again",
			r:    &podRollout{Good: good, Rollout: Rollout{State: RolloutHeld, Hash: "v1:new"}},
			o:    obs(nil), want: OutcomeStarted, state: RolloutProgressing,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "an operator's hold" {
				tt.r.Hold = &Hold{By: "ops", Reason: "debugging", Since: t0}
			}
			got := tt.r.step(tt.o)
			if got != tt.want || tt.r.Rollout.State != tt.state || !strings.Contains(tt.r.Rollout.Reason, tt.reason) {
				t.Fatalf("step: %v, rollout %+v; want %v, state %s, reason containing %q", got, tt.r.Rollout, tt.want, tt.state, tt.reason)
			}
			if tt.check != nil {
				tt.check(t, tt.r)
			}
		})
	}
}
