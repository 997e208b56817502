package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// Init containers are checked as containers are, share their names with
// the app containers, and have nothing that only runs beside the app.
func TestInitContainersAreChecked(t *testing.T) {
	tests := []struct {
		name string
		edit func(m *manifest.Manifest, c *manifest.Container)
		want string
	}{
		{"plain", func(*manifest.Manifest, *manifest.Container) {}, ""},
		{"no image", func(_ *manifest.Manifest, c *manifest.Container) { c.Image = "" }, "initContainers[0].image"},
		{"name of an app container", func(_ *manifest.Manifest, c *manifest.Container) { c.Name = "app" }, `initContainers[0].name: duplicate container name "app"`},
		{"not a DNS label", func(_ *manifest.Manifest, c *manifest.Container) { c.Name = "Setup" }, "initContainers[0].name"},
		{"ports", func(_ *manifest.Manifest, c *manifest.Container) { c.Ports = []manifest.Port{{ContainerPort: 80}} }, "initContainers[0].ports: an init container runs to completion"},
		{"probe", func(_ *manifest.Manifest, c *manifest.Container) {
			c.ReadinessProbe = &manifest.Probe{Exec: &manifest.Exec{Command: []string{"ok"}}}
		}, "initContainers[0].readinessProbe"},
		{"hooks", func(_ *manifest.Manifest, c *manifest.Container) {
			c.Lifecycle = &manifest.Lifecycle{PreStop: &manifest.Hook{SleepSeconds: 1}}
		}, "initContainers[0].lifecycle"},
		{"chosen name", func(_ *manifest.Manifest, c *manifest.Container) { c.ContainerName = "setup" }, "initContainers[0].containerName"},
		{"undeclared volume", func(_ *manifest.Manifest, c *manifest.Container) {
			c.VolumeMounts = []manifest.VolumeMount{{Name: "nowhere", MountPath: "/x"}}
		}, "initContainers[0].volumeMounts[0]"},
		{"privileged without the policy", func(_ *manifest.Manifest, c *manifest.Container) { c.Privileged = true }, "initContainers[0].privileged"},
		{"in a pod joining another's network", func(m *manifest.Manifest, _ *manifest.Container) { m.NetworkOf = "other" }, "initContainers: a pod that joins another pod's network"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("p", 0)
			c := manifest.Container{Name: "setup", Image: "busybox:1.36", Command: []string{"true"}}
			tt.edit(&m, &c)
			m.InitContainers = []manifest.Container{c}
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
