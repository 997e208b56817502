package rollouts

import (
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
)

// TestSettledOnlyWhenAdvanceLooksAtNothing: a no-op sync skips Advance
// only when Advance would neither observe a pod nor forget one.
func TestSettledOnlyWhenAdvanceLooksAtNothing(t *testing.T) {
	web := podspec.Pod{Manifest: manifest.Manifest{ID: "web"}}
	hashes := map[string]string{"web": "v1:web"}
	complete := func() *podRollout { return &podRollout{Rollout: Rollout{State: RolloutComplete, Hash: "v1:web"}} }
	tests := []struct {
		name  string
		pods  map[string]*podRollout
		ready bool
		want  bool
	}{
		{name: "complete at its hash", pods: map[string]*podRollout{"web": complete()}, ready: true, want: true},
		{name: "no rollout yet", pods: map[string]*podRollout{}},
		{name: "complete at another hash", pods: map[string]*podRollout{"web": {Rollout: Rollout{State: RolloutComplete, Hash: "v1:old"}}}},
		{name: "progressing", pods: map[string]*podRollout{"web": {Rollout: Rollout{State: RolloutProgressing, Hash: "v1:web"}}}},
		{name: "held", pods: map[string]*podRollout{"web": func() *podRollout { r := complete(); r.Hold = &Hold{By: "op"}; return r }()}},
		{name: "held back", pods: map[string]*podRollout{"web": func() *podRollout { r := complete(); r.Bad = &badVersion{Hash: "v1:bad"}; return r }()}},
		{name: "a pod no source declares, ready", pods: map[string]*podRollout{"web": complete(), "gone": complete()}, ready: true},
		{name: "a pod no source declares, not ready", pods: map[string]*podRollout{"web": complete(), "gone": complete()}, want: true},
		{name: "a held pod no source declares", pods: map[string]*podRollout{"web": complete(), "kept": {Hold: &Hold{By: "op"}}}, ready: true, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Load("", nil, nil, nil)
			s.pods = tc.pods
			if got := s.Settled([]podspec.Pod{web}, hashes, tc.ready); got != tc.want {
				t.Fatalf("Settled = %v, want %v", got, tc.want)
			}
			if !tc.want {
				return
			}
			observed := false
			notes := s.Advance(Seen{Now: time.Now(), Declared: []podspec.Pod{web}, Hashes: hashes, Ready: tc.ready,
				Present: func(string) bool { return false },
				Observe: func(podspec.Pod, string, *manifest.Manifest) Observation { observed = true; return Observation{} }})
			if observed || len(notes) > 0 || len(s.pods) != len(tc.pods) {
				t.Errorf("Advance of a settled store: observed %v, notes %+v, %d pods kept of %d", observed, notes, len(s.pods), len(tc.pods))
			}
		})
	}
}
