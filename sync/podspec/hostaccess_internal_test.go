package podspec

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// A change to a container's host access is in its hash and its reason;
// a log option's value never shows in either.
func TestHostAccessReason(t *testing.T) {
	env := RandomEnvHasher()
	base := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1",
		Logging: &manifest.Logging{Driver: "splunk", Options: map[string]string{"splunk-token": "tok-secret-1"}}}}}
	changed := base.Clone()
	changed.Containers[0].CapAdd = []string{"NET_ADMIN"}
	changed.Containers[0].Logging.Options["splunk-token"] = "tok-secret-2"
	if manifest.ContainerHash(base, 0) == manifest.ContainerHash(changed, 0) {
		t.Fatal("hash unchanged")
	}
	reasons := strings.Join(changeReasons(Summarize(base.WithDefaults(), 0, env), Summarize(changed.WithDefaults(), 0, env)), "; ")
	if !strings.Contains(reasons, "host access [") || !strings.Contains(reasons, "capAdd=NET_ADMIN") {
		t.Errorf("reasons %q, want the host access named", reasons)
	}
	label := Summarize(changed.WithDefaults(), 0, env).Label()
	for _, s := range []string{reasons, label} {
		if strings.Contains(s, "tok-secret") {
			t.Errorf("a log option's value shows: %s", s)
		}
	}
	if r := Redact(changed, env); strings.Contains(r.Containers[0].Logging.Options["splunk-token"], "tok-secret") {
		t.Error("status shows a log option's value")
	}
	if changed.Containers[0].Logging.Options["splunk-token"] != "tok-secret-2" {
		t.Error("Redact changed the manifest it was given")
	}
}
