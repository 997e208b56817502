package kube_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/kube"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/translate")

// translation is what a golden file holds: the pods made, the errors and
// the notes, as text.
type translation struct {
	Pods   []manifest.Manifest `json:"pods,omitempty"`
	Errors []string            `json:"errors,omitempty"`
	Notes  []string            `json:"notes,omitempty"`
}

func translateFile(t *testing.T, path string) translation {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := manifest.Decode(data, manifest.Origin{Source: "repo", File: filepath.Base(path)})
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if strings.HasPrefix(filepath.Base(path), "sops-") {
		// Read from a SOPS file, its metadata stripped, as a file or git
		// source's reader marks it.
		for i := range ms {
			if ms[i].Kube != nil {
				ms[i].Kube.Sealed = true
			}
		}
	}
	pods, errs := kube.Translate(ms)
	var out translation
	for _, p := range pods {
		out.Pods = append(out.Pods, p.Manifest)
		for _, e := range p.Errors {
			out.Errors = append(out.Errors, e.Error())
		}
		for _, n := range p.Notes {
			out.Notes = append(out.Notes, n.Error())
		}
	}
	for _, e := range errs {
		out.Errors = append(out.Errors, e.Error())
	}
	return out
}

// TestTranslationMatchesGoldenFiles translates each object file of
// testdata/translate and compares the pods, errors and notes with its
// .golden.json file (go test -run Golden -update rewrites them).
func TestTranslationMatchesGoldenFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/translate/*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			got, err := json.MarshalIndent(translateFile(t, f), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(f, ".yaml") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run Golden -update writes it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("translation of %s differs from %s:\n%s", f, golden, got)
			}
		})
	}
}
