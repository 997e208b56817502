package manifest

import (
	"errors"
	"strings"
	"testing"
)

// A pod reading its own address in a network of its own gets an infra
// container, whatever the number of its containers; on the host's network
// or in another pod's, it needs none.
func TestReadingThePodAddressGivesThePodAnInfraContainer(t *testing.T) {
	podIP := FieldToken(FieldPodIP)
	tests := []struct {
		name string
		edit func(m *Manifest)
		want bool
	}{
		{"nothing read", func(*Manifest) {}, false},
		{"env", func(m *Manifest) { m.Containers[0].Env = []EnvVar{{Name: "IP", Value: podIP}} }, true},
		{"args", func(m *Manifest) { m.Containers[0].Args = []string{"--ip=" + podIP} }, true},
		{"command", func(m *Manifest) { m.Containers[0].Command = []string{"/x", podIP} }, true},
		{"init container", func(m *Manifest) {
			m.InitContainers = []Container{{Name: "i", Image: "x", Env: []EnvVar{{Name: "IP", Value: podIP}}}}
		}, true},
		{"the host's address only", func(m *Manifest) { m.Containers[0].Env = []EnvVar{{Name: "IP", Value: FieldToken(FieldHostIP)}} }, false},
		{"host network", func(m *Manifest) {
			m.HostNetwork, m.Containers[0].Env = true, []EnvVar{{Name: "IP", Value: podIP}}
		}, false},
		{"another pod's network", func(m *Manifest) {
			m.NetworkOf, m.Containers[0].Env = "vpn", []EnvVar{{Name: "IP", Value: podIP}}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Manifest{ID: "p", Containers: []Container{{Name: "app", Image: "x"}}}
			tt.edit(&m)
			if got := m.HasInfra(); got != tt.want {
				t.Errorf("HasInfra() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Each token is replaced by its field's value; the first error stops.
func TestExpandFieldsReplacesEachToken(t *testing.T) {
	value := func(path string) (string, error) {
		switch path {
		case FieldPodIP:
			return "10.1.2.3", nil
		case FieldHostIP:
			return "192.0.2.2", nil
		}
		return "", errors.New("no such field")
	}
	tests := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"[" + FieldToken(FieldPodIP) + "]:9100", "[10.1.2.3]:9100", ""},
		{FieldToken(FieldPodIP) + "," + FieldToken(FieldHostIP), "10.1.2.3,192.0.2.2", ""},
		{FieldToken("spec.nodeName"), "", "no such field"},
		{"{{hostlet-field:status.podIP", "{{hostlet-field:status.podIP", ""},
	}
	for _, tt := range tests {
		got, err := ExpandFields(tt.in, value)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("ExpandFields(%q) error = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ExpandFields(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzFieldTokenProblem: what validation passes, the host expands whole.
func FuzzFieldTokenProblem(f *testing.F) {
	for _, s := range []string{"", "x", FieldToken(FieldPodIP), "{{hostlet-field:", "{{hostlet-field:}}{{hostlet-field:status.hostIP}}", "{{hostlet-field:{{hostlet-field:status.podIP}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		problem := FieldTokenProblem(s)
		out, err := ExpandFields(s, func(string) (string, error) { return "1.2.3.4", nil })
		if err != nil {
			t.Fatalf("ExpandFields(%q): %v", s, err)
		}
		// Text that passes validation is left with no token once expanded.
		if problem == "" && strings.Contains(out, FieldTokenPrefix) {
			t.Fatalf("FieldTokenProblem(%q) passed, but ExpandFields left a token: %q", s, out)
		}
	})
}
