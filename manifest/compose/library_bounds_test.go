package compose_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest/compose"
)

// TestComposeLibraryPanicRefusesTheProject: compose-go v2.16.2 panics on
// an env_file item whose path is not a string (found by the hostile
// walk, TestEveryComposeKeyValidatesInBoundedTime), before its schema is
// checked. The project is refused with an error of its own; the load
// returns.
func TestComposeLibraryPanicRefusesTheProject(t *testing.T) {
	for _, path := range []string{"1", "[a]", "{a: b}", "null", "true"} {
		files := mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    env_file: [{path: " + path + "}]\n"}
		var errs []string
		if !testkit.Bounded(t, testkit.BoundedLimit(), "env_file path "+path, func() { _, errs = load(t, files, compose.Options{}) }) {
			return
		}
		if len(errs) == 0 {
			t.Errorf("env_file path %s: no error", path)
		}
		for _, e := range errs {
			if strings.Contains(e, "\n") || strings.Contains(e, "goroutine") {
				t.Errorf("env_file path %s: error %q", path, e)
			}
		}
	}
}

// keys is n lines "kI: v" indented by indent.
func keys(n int, indent string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk%d: v\n", indent, i)
	}
	return b.String()
}

// TestDeepComposeFileIsRefusedInMilliseconds: compose-go's work on a node
// grows with its depth (a file nested 1,000 deep took seconds, 10,000
// deep minutes), and with the square of a mapping's keys (a service of
// 20,000 keys took 10 s). A Compose file, or a file it extends, nested
// deeper than MaxDepth or of more than MaxNodes nodes is refused before
// compose-go reads it; one at the bounds loads.
func TestDeepComposeFileIsRefusedInMilliseconds(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("{a: ", n) + "1" + strings.Repeat("}", n) }
	tests := []struct {
		name  string
		files mapFiles
		want  string
	}{
		{name: "deep extension", want: "nested more than 64 deep",
			files: mapFiles{"compose.yaml": "x-deep: " + nest(10_000) + "\nservices:\n  web: {image: busybox}\n"}},
		{name: "deep lists in a service", want: "nested more than 64 deep",
			files: mapFiles{"compose.yaml": "services:\n  web: {image: busybox, command: " + strings.Repeat("[", 5_000) + strings.Repeat("]", 5_000) + "}\n"}},
		{name: "deep extended file", want: "nested more than 64 deep",
			files: mapFiles{
				"compose.yaml": "services:\n  web: {extends: {file: base.yaml, service: app}}\n",
				"base.yaml":    "x-deep: " + nest(10_000) + "\nservices:\n  app: {image: busybox}\n",
			}},
		{name: "at the bound", want: "",
			files: mapFiles{"compose.yaml": "x-deep: " + nest(compose.MaxDepth-1) + "\nservices:\n  web: {image: busybox}\n"}},
		{name: "a service of 50,000 keys", want: "more than 10000 YAML nodes",
			files: mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n" + keys(50_000, "    ")}},
		{name: "an extended file of 50,000 keys", want: "more than 10000 YAML nodes",
			files: mapFiles{
				"compose.yaml": "services:\n  web: {extends: {file: base.yaml, service: app}}\n",
				"base.yaml":    "services:\n  app:\n    image: busybox\n" + keys(50_000, "    "),
			}},
		{name: "nodes at the bound", want: "",
			files: mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    labels:\n" + keys(compose.MaxNodes/2-10, "      ")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []string
			start := time.Now()
			if !testkit.Bounded(t, testkit.BoundedLimit(), "load", func() { _, errs = load(t, tt.files, compose.Options{}) }) {
				return
			}
			got := strings.Join(errs, "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("errors %q, want %q", got, tt.want)
			}
			if d := time.Since(start); tt.want != "" && d > 10*time.Second {
				t.Errorf("refused after %s, want milliseconds (10 s on a loaded machine)", d)
			}
		})
	}
}
