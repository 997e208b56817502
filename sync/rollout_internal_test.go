package sync

import (
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
)

// TestRolloutStep covers every transition of the rollout state machine.
func TestRolloutStep(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	good := &version{Hash: "v1:good", Revision: "r1", Source: "fleet", Manifest: manifest.Manifest{ID: "web"}}
	pod := Pod{Manifest: manifest.Manifest{ID: "web"}, Source: "fleet", Revision: "r2"}
	obs := func(mod func(*observation)) observation {
		o := observation{now: t0, pod: pod, hash: "v1:new", revision: "r2", policy: manifest.RollbackAuto,
			minReady: 10 * time.Second, deadline: 300 * time.Second}
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
		o      observation
		want   outcome
		state  string
		reason string // a substring of the rollout's reason
		check  func(t *testing.T, r *podRollout)
	}{
		{
			name: "a new pod starts progressing", r: &podRollout{}, o: obs(nil),
			want: outcomeStarted, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if r.Rollout.PreviousHash != "" || !r.Applied.IsZero() {
					t.Errorf("previousHash %q applied %v, want none", r.Rollout.PreviousHash, r.Applied)
				}
			},
		},
		{
			name: "a changed pod progresses from its good version", r: &podRollout{Good: good, Rollout: Rollout{State: RolloutComplete, Hash: "v1:good"}},
			o: obs(func(o *observation) { o.applied = true }), want: outcomeStarted, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if r.Rollout.PreviousHash != "v1:good" || !r.Applied.Equal(t0) || r.Rollout.Since != t0 {
					t.Errorf("rollout %+v applied %v, want previous v1:good, applied and since now", r.Rollout, r.Applied)
				}
			},
		},
		{
			name: "waiting for its images, no deadline runs", r: progressing(time.Time{}),
			o: obs(func(o *observation) { o.now = t0.Add(time.Hour); o.failure = "ErrImagePull: no such image" }), want: outcomeNone, state: RolloutProgressing,
		},
		{
			name: "applied and not ready before the deadline", r: progressing(t0.Add(-time.Minute)),
			o:    obs(func(o *observation) { o.applied = true; o.notReady = "container app: readiness probe not passing" }),
			want: outcomeNone, state: RolloutProgressing, reason: "readiness probe not passing",
		},
		{
			name: "ready, not yet for minReadySeconds", r: progressing(t0.Add(-time.Minute)),
			o: obs(func(o *observation) { o.applied, o.ready = true, true }), want: outcomeNone, state: RolloutProgressing, reason: "complete after",
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
			o: obs(func(o *observation) { o.applied, o.ready = true, true }), want: outcomeComplete, state: RolloutComplete,
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
			o:    obs(func(o *observation) { o.applied, o.ready, o.startedAt = true, true, t0.Add(-5*time.Second) }),
			want: outcomeNone, state: RolloutProgressing,
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
			o: obs(func(o *observation) { o.applied = true }), want: outcomeNone, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if !r.readySince.IsZero() {
					t.Errorf("readySince %v, want zero", r.readySince)
				}
			},
		},
		{
			name: "a failure rolls back to the good version", r: progressing(t0.Add(-time.Minute)),
			o:    obs(func(o *observation) { o.applied, o.failure = true, "container app keeps crashing (CrashLoopBackOff)" }),
			want: outcomeRolledBack, state: RolloutRolledBack, reason: "keeps crashing",
			check: func(t *testing.T, r *podRollout) {
				if r.Bad == nil || r.Bad.Hash != "v1:new" || r.Bad.Revision != "r2" || r.Rollout.PreviousHash != "v1:good" || r.Good != good {
					t.Errorf("bad %+v rollout %+v, want the new version held back and the good one kept", r.Bad, r.Rollout)
				}
			},
		},
		{
			name: "the deadline rolls back", r: progressing(t0.Add(-300 * time.Second)),
			o:    obs(func(o *observation) { o.applied, o.notReady = true, "container app: healthcheck starting" }),
			want: outcomeRolledBack, state: RolloutRolledBack, reason: "not ready within progressDeadlineSeconds (5m0s): container app: healthcheck starting",
		},
		{
			name: "rollback Never leaves it failing, once", r: progressing(t0.Add(-time.Minute)),
			o: obs(func(o *observation) {
				o.applied, o.failure, o.policy = true, "container app exited (1)", manifest.RollbackNever
			}),
			want: outcomeFailed, state: RolloutProgressing, reason: "(rollback: Never)",
			check: func(t *testing.T, r *podRollout) {
				if r.Bad != nil || !r.Failed {
					t.Errorf("bad %+v failed %v, want nothing held back and the failure kept", r.Bad, r.Failed)
				}
				if out := r.step(obs(func(o *observation) { o.applied, o.failure, o.policy = true, "again", manifest.RollbackNever })); out != outcomeNone {
					t.Errorf("a second step: %v, want nothing new", out)
				}
			},
		},
		{
			name: "rollback Hold holds the pod", r: progressing(t0.Add(-time.Minute)),
			o: obs(func(o *observation) {
				o.applied, o.failure, o.policy = true, "container app is unhealthy", manifest.RollbackHold
			}),
			want: outcomeHeld, state: RolloutHeld, reason: "update failed: container app is unhealthy",
			check: func(t *testing.T, r *podRollout) {
				if r.Hold == nil || r.Hold.By != "hostlet" || r.Rollout.Hold != r.Hold {
					t.Errorf("hold %+v, want one by hostlet", r.Hold)
				}
			},
		},
		{
			name: "a new pod that fails has nothing to return to",
			r:    &podRollout{Applied: t0.Add(-time.Minute), Rollout: Rollout{State: RolloutProgressing, Hash: "v1:new", Revision: "r2"}},
			o:    obs(func(o *observation) { o.applied, o.failure = true, "StartError: port taken" }),
			want: outcomeFailed, state: RolloutProgressing, reason: "no earlier ready version",
		},
		{
			name: "the held back version stays held back",
			r:    &podRollout{Good: good, Bad: &badVersion{Hash: "v1:new", Revision: "r2", Reason: "crash", At: t0.Add(-time.Hour)}, Rollout: Rollout{State: RolloutRolledBack, Hash: "v1:new"}},
			o:    obs(func(o *observation) { o.applied, o.failure = true, "whatever the restored version does" }),
			want: outcomeNone, state: RolloutRolledBack, reason: "crash",
		},
		{
			name: "a held back version is restored after a restart too",
			r:    &podRollout{Good: good, Bad: &badVersion{Hash: "v1:new", Revision: "r2", Reason: "crash", At: t0.Add(-time.Hour)}},
			o:    obs(nil), want: outcomeNone, state: RolloutRolledBack,
			check: func(t *testing.T, r *podRollout) {
				if r.Rollout.PreviousHash != "v1:good" || !r.Rollout.Since.Equal(t0.Add(-time.Hour)) {
					t.Errorf("rollout %+v, want since the rollback, previous the good version", r.Rollout)
				}
			},
		},
		{
			name: "a later commit is tried",
			r:    &podRollout{Good: good, Bad: &badVersion{Hash: "v1:new", Revision: "r2", Reason: "crash"}, Rollout: Rollout{State: RolloutRolledBack, Hash: "v1:new"}},
			o:    obs(func(o *observation) { o.hash, o.revision = "v1:newer", "r3" }), want: outcomeStarted, state: RolloutProgressing,
			check: func(t *testing.T, r *podRollout) {
				if r.Bad != nil || r.Rollout.Hash != "v1:newer" || r.Rollout.PreviousHash != "v1:good" {
					t.Errorf("bad %+v rollout %+v, want the new commit progressing from the good version", r.Bad, r.Rollout)
				}
			},
		},
		{
			name: "an operator's hold", r: progressing(t0.Add(-time.Hour)),
			o: obs(func(o *observation) { o.applied, o.failure = true, "crash" }), want: outcomeNone, state: RolloutHeld, reason: "debugging",
			check: func(t *testing.T, r *podRollout) {
				if r.Bad != nil {
					t.Error("a held pod was rolled back")
				}
			},
		},
		{
			name: "a release starts the rollout again",
			r:    &podRollout{Good: good, Rollout: Rollout{State: RolloutHeld, Hash: "v1:new"}},
			o:    obs(nil), want: outcomeStarted, state: RolloutProgressing,
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
