package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	"github.com/hostlet/hostlet/validate"
)

// TestBuildLabelsCannotOverwriteEventAttributes: the engine's container
// events carry the container's labels among their attributes, and a
// label overwrites the event's own exitCode, signal, name, image or
// execDuration; a built image's labels are its containers', so a build's
// labels may not use those keys (case matters, as in the engine).
func TestBuildLabelsCannotOverwriteEventAttributes(t *testing.T) {
	for _, tt := range []struct {
		key    string
		refuse bool
	}{
		{"exitCode", true}, {"signal", true}, {"name", true}, {"image", true}, {"execDuration", true},
		{"exitcode", false}, {"org.example.name", false},
	} {
		t.Run(tt.key, func(t *testing.T) {
			files := map[string]string{"Dockerfile": "FROM scratch\nCOPY f /f\n", "f": "x"}
			f := buildctx.NewListFolder([]string{"Dockerfile", "f"}, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
			c := manifest.Container{Name: "app", Build: &manifest.Build{Context: ".", Labels: map[string]string{tt.key: "0"}}}
			if err := buildctx.Resolve("web", &c, ".", f); err != nil {
				t.Fatal(err)
			}
			m := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{c}}
			err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{})
			switch {
			case tt.refuse && (err == nil || !strings.Contains(err.Error(), `"`+tt.key+`": the engine's container events`)):
				t.Errorf("build label %s: %v, want it refused", tt.key, err)
			case !tt.refuse && err != nil:
				t.Errorf("build label %s: %v, want it accepted", tt.key, err)
			}
		})
	}
}
