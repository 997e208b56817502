package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// Lifecycle hooks: one action each; postStart runs a command only; a
// preStop's httpGet is checked as a probe's (its port, its host).
func TestLifecycleHooksAreChecked(t *testing.T) {
	exec := &manifest.Exec{Command: []string{"drain"}}
	tests := []struct {
		name string
		l    manifest.Lifecycle
		want string
	}{
		{"exec both", manifest.Lifecycle{PostStart: &manifest.Hook{Exec: exec}, PreStop: &manifest.Hook{Exec: exec}}, ""},
		{"preStop httpGet and sleep", manifest.Lifecycle{PreStop: &manifest.Hook{HTTPGet: &manifest.HTTPGet{Port: "8000"}, SleepSeconds: 3}}, "lifecycle.preStop: set one of exec, httpGet, sleepSeconds"},
		{"postStart httpGet", manifest.Lifecycle{PostStart: &manifest.Hook{HTTPGet: &manifest.HTTPGet{Port: "8000"}}}, "lifecycle.postStart.httpGet: not supported by hostlet yet in postStart"},
		{"preStop port not the container's", manifest.Lifecycle{PreStop: &manifest.Hook{HTTPGet: &manifest.HTTPGet{Port: "metrics"}}}, "lifecycle.preStop.httpGet.port"},
		{"preStop loopback", manifest.Lifecycle{PreStop: &manifest.Hook{HTTPGet: &manifest.HTTPGet{Port: "8000", Host: "127.0.0.1"}}}, "lifecycle.preStop.httpGet.host"},
		{"empty", manifest.Lifecycle{PreStop: &manifest.Hook{}}, "lifecycle.preStop: set one of exec, httpGet, sleepSeconds"},
		{"empty command", manifest.Lifecycle{PostStart: &manifest.Hook{Exec: &manifest.Exec{}}}, "lifecycle.postStart.exec.command: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("p", 8080)
			l := tt.l
			m.Containers[0].Lifecycle = &l
			err := validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err = %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err = %v, want one holding %q", err, tt.want)
			}
		})
	}
}

// runAsNonRoot with a user of the manifest checks that user: root, 0 or
// a name (which only the image resolves) is refused.
func TestRunAsNonRootChecksTheUserGiven(t *testing.T) {
	for user, want := range map[string]string{
		"1000": "", "1000:0": "", "0": `runs as root (user "0")`, "root:staff": `runs as root (user "root:staff")`,
		"nginx": `runs as user "nginx", a name that cannot be checked`,
	} {
		m := pod("p", 8080)
		m.Containers[0].RunAsNonRoot, m.Containers[0].User = true, user
		err := validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})
		switch {
		case want == "" && err != nil:
			t.Errorf("user %q: %v, want none", user, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), "containers[0].user: runAsNonRoot, but the container "+want)):
			t.Errorf("user %q: %v, want %q", user, err, want)
		}
	}
}
