package podspec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// What status shows of a manifest holds no env value, log option value or
// build argument, of an app container or of an init container.
func TestRedactHidesValuesOfEveryContainer(t *testing.T) {
	env := RandomEnvHasher()
	secretOf := func(who string) manifest.Container {
		get := func(what string) *manifest.HTTPGet {
			return &manifest.HTTPGet{Port: "80", HTTPHeaders: []manifest.HTTPHeader{{Name: "Authorization", Value: who + "-" + what + "-secret"}}}
		}
		return manifest.Container{Name: who, Image: "example.org/app:1",
			Env:            []manifest.EnvVar{{Name: "TOKEN", Value: who + "-env-secret"}},
			Logging:        &manifest.Logging{Driver: "splunk", Options: map[string]string{"splunk-token": who + "-log-secret"}},
			ReadinessProbe: &manifest.Probe{Type: manifest.ProbeHTTP, HTTPGet: get("probe")},
			Lifecycle:      &manifest.Lifecycle{PreStop: &manifest.Hook{HTTPGet: get("hook")}}}
	}
	m := manifest.Manifest{Version: manifest.Version, ID: "web",
		Containers:     []manifest.Container{secretOf("app")},
		InitContainers: []manifest.Container{secretOf("setup")}}
	shown, err := json.Marshal(Redact(m, env))
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"app-env-secret", "app-log-secret", "app-probe-secret", "app-hook-secret", "setup-env-secret", "setup-log-secret"} {
		if strings.Contains(string(shown), secret) {
			t.Errorf("the redacted manifest shows %s: %s", secret, shown)
		}
	}
	if m.InitContainers[0].Env[0].Value != "setup-env-secret" || m.Containers[0].ReadinessProbe.HTTPGet.HTTPHeaders[0].Value != "app-probe-secret" {
		t.Error("Redact changed the manifest it was given")
	}
	label := preStopLabel(m.Containers[0], 30)
	if shown := RedactPreStopLabel(label, env); strings.Contains(shown, "app-hook-secret") || !strings.Contains(label, "app-hook-secret") {
		t.Errorf("the preStop label as shown: %s", shown)
	}
}
