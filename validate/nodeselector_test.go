package validate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// A pod whose nodeSelector this host's labels do not match is for other
// hosts: neither accepted nor rejected, not checked (its host port does
// not conflict here), and said why.
func TestSetLeavesPodsForOtherHostsElsewhere(t *testing.T) {
	db := pod("db", 5432)
	db.NodeSelector = map[string]string{"role": "db"}
	web := pod("web", 5432)
	web.NodeSelector = map[string]string{"role": "web", "kubernetes.io/os": "linux"}
	free := pod("any", 8080)
	srcs := []manifest.Snapshot{{Name: "repo", Manifests: []manifest.Sourced{{Manifest: db}, {Manifest: web}, {Manifest: free}}}}
	tests := []struct {
		name      string
		host      map[string]string
		accepted  []string
		elsewhere string
	}{
		{"web host", map[string]string{"role": "web", "kubernetes.io/os": "linux"}, []string{"web", "any"}, "db: nodeSelector role=db: this host has role=web"},
		{"unlabelled host", map[string]string{}, []string{"any"}, "db: nodeSelector role=db: this host has no label role"},
		{"host not known", nil, []string{"db", "any"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := validate.Set(srcs, validate.Options{HostLabels: tt.host})
			var got []string
			for _, a := range res.Accepted {
				got = append(got, a.Manifest.ID)
			}
			if !slices.Equal(got, tt.accepted) {
				t.Errorf("accepted %q, want %q (rejected %v)", got, tt.accepted, res.Rejected)
			}
			if tt.elsewhere == "" {
				return
			}
			if len(res.Elsewhere) == 0 || res.Elsewhere[0].ID+": "+res.Elsewhere[0].Reason != tt.elsewhere {
				t.Errorf("elsewhere %+v, want first %q", res.Elsewhere, tt.elsewhere)
			}
		})
	}
}

// A nodeSelector is bounded and has the label syntax of Kubernetes.
func TestNodeSelectorFieldsAreChecked(t *testing.T) {
	tests := []struct {
		sel  map[string]string
		want string
	}{
		{map[string]string{"kubernetes.io/os": "linux", "role": ""}, ""},
		{map[string]string{"bad key!": "x"}, `nodeSelector: "bad key!" is not a label key`},
		{map[string]string{"role": "a b"}, `nodeSelector["role"]: "a b" is not a label value`},
	}
	for _, tt := range tests {
		m := pod("p")
		m.NodeSelector = tt.sel
		err := validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.sel, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%v: err %v, want %q", tt.sel, err, tt.want)
		}
	}
}

// A pod for other hosts keeps its id here: a later source's pod of that
// id is a duplicate, not the owner (a typo in a nodeSelector does not
// hand a pod over).
func TestPodForOtherHostsKeepsItsID(t *testing.T) {
	mine := pod("db")
	mine.NodeSelector = map[string]string{"kubernetes.io/hostname": "web01"}
	theirs := pod("db")
	srcs := []manifest.Snapshot{
		{Name: "a", Manifests: []manifest.Sourced{{Manifest: mine}}},
		{Name: "b", Manifests: []manifest.Sourced{{Manifest: theirs}}},
	}
	res := validate.Set(srcs, validate.Options{HostLabels: map[string]string{"kubernetes.io/hostname": "web1"}})
	if len(res.Accepted) != 0 || len(res.Elsewhere) != 1 || len(res.Rejected) != 1 || !strings.Contains(res.Rejected[0].Reasons[0], "duplicate id") {
		t.Errorf("accepted %d, elsewhere %v, rejected %v; want b's db rejected as a duplicate", len(res.Accepted), res.Elsewhere, res.Rejected)
	}
}

// kubernetes.io/arch is the engine's architecture: matched where the
// engine is known, and where it is not, the pod is not taken, saying why.
func TestArchLabelIsTheEngines(t *testing.T) {
	m := pod("arm")
	m.NodeSelector = map[string]string{"kubernetes.io/arch": "arm64"}
	srcs := []manifest.Snapshot{{Name: "a", Manifests: []manifest.Sourced{{Manifest: m}}}}
	tests := []struct {
		platform string
		accepted int
		why      string
	}{
		{"linux/arm64", 1, ""},
		{"linux/arm64/v8", 1, ""},
		{"linux/amd64", 0, "this host has kubernetes.io/arch=amd64"},
		{"", 0, "this host's architecture is not known here"},
	}
	for _, tt := range tests {
		opts := validate.Options{HostLabels: map[string]string{}}
		opts.Policy.EnginePlatform = tt.platform
		res := validate.Set(srcs, opts)
		if len(res.Accepted) != tt.accepted || tt.why != "" && (len(res.Elsewhere) != 1 || !strings.Contains(res.Elsewhere[0].Reason, tt.why)) {
			t.Errorf("engine %q: accepted %d, elsewhere %v; want %d, %q", tt.platform, len(res.Accepted), res.Elsewhere, tt.accepted, tt.why)
		}
	}
}
