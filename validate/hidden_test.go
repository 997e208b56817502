package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// TestHiddenValuesLeftOutLiteralOnesShown: a value interpolation made is
// left out of every error about its manifest, however short (a message
// argument, a part a parser split off, a quoted part of a library's
// message, a map key), and the last pass scrubs one a message holds; a
// value typed in the file is still quoted.
func TestHiddenValuesLeftOutLiteralOnesShown(t *testing.T) {
	m := manifest.Manifest{Version: manifest.Version, ID: "web", Labels: map[string]string{"io.hostlet.k9": "x"}, Containers: []manifest.Container{{
		Name: "app", Image: "Zq", StopSignal: "SIGsecretpw", User: "bad user", WorkingDir: "w7",
	}}}
	s := manifest.Sourced{Origin: manifest.Origin{Source: "src", File: "a.yaml"}, Manifest: m,
		Hidden: []string{"SIGsecretpw", "w7", "io.hostlet.k9"}, HiddenParts: []string{"Zq"}}
	res := validate.Set([]manifest.Snapshot{{Name: "src", Manifests: []manifest.Sourced{s}}}, validate.Options{})
	if len(res.Rejected) != 1 {
		t.Fatalf("rejected %+v, want web", res.Rejected)
	}
	out := strings.Join(res.Rejected[0].Reasons, "\n")
	for _, hidden := range []string{"SIGsecretpw", `"w7"`, `"Zq"`, "library/Zq", "k9"} {
		if strings.Contains(out, hidden) {
			t.Errorf("reasons show %s:\n%s", hidden, out)
		}
	}
	for _, shown := range []string{`containers[0].user: "bad user" is not user`, "containers[0].stopSignal: <value hidden> is not a signal", "containers[0].workingDir: <value hidden> is not an absolute path"} {
		if !strings.Contains(out, shown) {
			t.Errorf("reasons lack %q:\n%s", shown, out)
		}
	}
}
