package imageupdate

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzEnvEdit: any .env text and value either refuse the edit or change
// exactly the bytes of the variable's last assignment, nothing else.
func FuzzEnvEdit(f *testing.F) {
	f.Add("# tags\nexport WEB_TAG=\"1.4.2\"   # bumped\nOTHER=x\n", "WEB_TAG", "1.4.3")
	f.Add("WEB_TAG=1.4.2\nWEB_TAG='1.4.1'\n", "WEB_TAG", "2.0.0@sha256:00")
	f.Fuzz(func(t *testing.T, text, name, value string) {
		e, err := envEdit([]byte(text), name, value)
		if err != nil {
			return
		}
		if e.start < 0 || e.end < e.start || e.end > len(text) {
			t.Fatalf("edit [%d, %d) out of a %d-byte file", e.start, e.end, len(text))
		}
		out := apply([]byte(text), []edit{e})
		if !bytes.HasPrefix(out, []byte(text[:e.start])) || !bytes.HasSuffix(out, []byte(text[e.end:])) {
			t.Fatalf("bytes around the value changed:\n%q\n%q", text, out)
		}
		if strings.ContainsAny(text[e.start:e.end], "\n") {
			t.Fatalf("the edit spans lines: %q", text[e.start:e.end])
		}
	})
}

// FuzzScalarSpan: the span found for a value is that value's bytes.
func FuzzScalarSpan(f *testing.F) {
	f.Add("containers:\n  - image: \"r/web:1.4.2\"  # x\n", 2, 14, "r/web:1.4.2")
	f.Add("a: 'é:1'\n", 1, 4, "é:1")
	f.Fuzz(func(t *testing.T, text string, line, column int, value string) {
		start, end, err := scalarSpan([]byte(text), line, column, value)
		if err != nil {
			return
		}
		if text[start:end] != value {
			t.Fatalf("span %q, want %q", text[start:end], value)
		}
	})
}

// FuzzScan: any manifest, Compose file and .env either scan or give a
// problem, and every target found can be edited or is refused, never
// written outside its scalar.
func FuzzScan(f *testing.F) {
	f.Add("version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: \"r/web:1.4.2\", imagePolicy: {semver: \"~1.4\"}}\n",
		"services:\n  web:\n    image: r/web:${TAG:-1.4}\n    x-hostlet-image-policy: {semver: ^1}\n", "TAG=1.4\n")
	f.Fuzz(func(t *testing.T, native, composeFile, env string) {
		dir := t.TempDir()
		for name, data := range map[string]string{"web.yaml": native, "p/compose.yaml": composeFile, "p/.env": env} {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		targets, _, err := Scan("s", dir)
		if err != nil {
			t.Fatal(err)
		}
		var us []Update
		for _, tg := range targets {
			us = append(us, Update{Target: tg, From: "1", To: "2.0.0"})
		}
		files, err := Edits(dir, us)
		if err != nil {
			return
		}
		for name, data := range files {
			if len(data) > len(native)+len(composeFile)+len(env)+64*len(us) {
				t.Fatalf("%s grew to %d bytes", name, len(data))
			}
		}
	})
}
