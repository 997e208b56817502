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
