package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// Lifecycle hooks: one action each; an httpGet is checked as a probe's
// (its port, its host).
func TestLifecycleHooksAreChecked(t *testing.T) {
	exec := &manifest.Exec{Command: []string{"drain"}}
	tests := []struct {
		name string
		l    manifest.Lifecycle
		want string
	}{
		{"exec both", manifest.Lifecycle{PostStart: &manifest.Hook{Exec: exec}, PreStop: &manifest.Hook{Exec: exec}}, ""},
		{"preStop httpGet and sleep", manifest.Lifecycle{PreStop: &manifest.Hook{HTTPGet: &manifest.HTTPGet{Port: "8000"}, SleepSeconds: 3}}, "lifecycle.preStop: set one of exec, httpGet, sleepSeconds"},
		{"postStart httpGet port not the container's", manifest.Lifecycle{PostStart: &manifest.Hook{HTTPGet: &manifest.HTTPGet{Port: "metrics"}}}, "lifecycle.postStart.httpGet.port"},
		{"postStart sleep negative", manifest.Lifecycle{PostStart: &manifest.Hook{SleepSeconds: -1}}, "lifecycle.postStart.sleepSeconds"},
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

// A field token of the running pod stands only in env values, command
// and args, whole, naming status.podIP or status.hostIP.
func TestFieldTokensAreCheckedWhereTheyStand(t *testing.T) {
	podIP, hostIP := manifest.FieldToken(manifest.FieldPodIP), manifest.FieldToken(manifest.FieldHostIP)
	tests := []struct {
		name string
		edit func(m *manifest.Manifest)
		want string
	}{
		{"env value", func(m *manifest.Manifest) {
			m.Containers[0].Env = []manifest.EnvVar{{Name: "A", Value: "http://" + podIP + ":80"}, {Name: "B", Value: hostIP}}
		}, ""},
		{"args and command", func(m *manifest.Manifest) {
			m.Containers[0].Command, m.Containers[0].Args = []string{"/web", "--ip=" + podIP}, []string{hostIP}
		}, ""},
		{"another field", func(m *manifest.Manifest) { m.Containers[0].WorkingDir = "/" + podIP }, "containers[0].workingDir: holds a {{hostlet-field: token, which only env values, command and args may"},
		{"a label", func(m *manifest.Manifest) { m.Labels = map[string]string{"ip": podIP} }, "labels.ip: holds a {{hostlet-field: token"},
		{"unknown field", func(m *manifest.Manifest) {
			m.Containers[0].Env = []manifest.EnvVar{{Name: "A", Value: manifest.FieldToken("spec.nodeName")}}
		}, "containers[0].env[0].value: holds a {{hostlet-field: token of a field hostlet does not give"},
		{"not closed", func(m *manifest.Manifest) { m.Containers[0].Args = []string{"{{hostlet-field:status.podIP"} }, "containers[0].args[0]: holds {{hostlet-field: without its closing }}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("p", 8080)
			tt.edit(&m)
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
