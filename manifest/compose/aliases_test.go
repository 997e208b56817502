package compose_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

// aliasDoc is a YAML document whose anchor is a list of n one-key
// mappings, used by uses aliases, and one service.
func aliasDoc(n, uses int) string {
	var b strings.Builder
	b.WriteString("x-a0: &a0 [")
	for i := range n {
		fmt.Fprintf(&b, "{k%d: v},", i)
	}
	b.WriteString("]\nx-b: [" + strings.Repeat("*a0,", uses) + "]\nservices: {web: {image: busybox:1.36}}\n")
	return b.String()
}

// TestComposeAliasExpansionIsBoundedBeforeComposeGo (issue 30 attack,
// finding 3): a 14.6 KB Compose file of 1,400 one-key mappings used by 80
// aliases cost hostlet-compose 22 s and 233 MB (compose-go works on every
// expanded node); eight such documents hit its 60 s timeout. A Compose
// file, or a file it extends, whose aliases expand its documents past
// manifest.MaxAliasNodes nodes together is refused before compose-go
// reads it; ordinary anchors and merge keys load.
func TestComposeAliasExpansionIsBoundedBeforeComposeGo(t *testing.T) {
	report, err := os.ReadFile(filepath.Join("testdata", "alias-expansion", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("aliases expand to more than %d YAML nodes in one Compose file", manifest.MaxAliasNodes)
	tests := []struct {
		name  string
		files mapFiles
		want  string
	}{
		{name: "the report's file", want: want, files: mapFiles{"compose.yaml": string(report)}},
		{name: "eight documents, each under the bound", want: want,
			files: mapFiles{"compose.yaml": strings.Repeat(aliasDoc(300, 60)+"---\n", 7) + aliasDoc(300, 60)}},
		{name: "an extended file", want: want,
			files: mapFiles{
				"compose.yaml": "services:\n  web: {extends: {file: base.yaml, service: web}}\n",
				"base.yaml":    string(report),
			}},
		{name: "anchors and merge keys", want: "",
			files: mapFiles{"compose.yaml": "x-common: &common\n  image: busybox:1.36\n  environment: &env {A: \"1\"}\n" +
				"services:\n  web: {<<: *common, environment: *env}\n  worker: {<<: *common}\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errs []string
			start := time.Now()
			if !testkit.Bounded(t, 10*time.Second, "load", func() { _, errs = load(t, tt.files, compose.Options{}) }) {
				return
			}
			got := strings.Join(errs, "\n")
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("errors %q, want %q", got, tt.want)
			}
			if d := time.Since(start); tt.want != "" && d > 3*time.Second {
				t.Errorf("refused after %s, want a few milliseconds (3 s on a loaded machine)", d)
			}
		})
	}
}
