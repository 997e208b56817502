package kube_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/kube"
)

// FuzzTranslate decodes any file and translates its Kubernetes objects:
// never a panic or a hang, and every pod made has an id, each error and
// note names its origin.
func FuzzTranslate(f *testing.F) {
	files, _ := filepath.Glob("testdata/translate/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: List, items: []}]\n"))
	f.Add([]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"},"spec":{"replicas":100}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		origin := manifest.Origin{Source: "s", File: "f.yaml"}
		ms, _ := manifest.Decode(data, origin)
		pods, errs := kube.Translate(ms)
		for _, p := range pods {
			if p.Manifest.ID == "" && len(p.Errors) == 0 {
				t.Errorf("a pod without an id and without errors: %+v", p.Manifest)
			}
			if len(p.Manifest.Containers) > 0 && p.Origin.Source != "s" {
				t.Errorf("pod %s: origin %v", p.Manifest.ID, p.Origin)
			}
		}
		for _, e := range errs {
			if e.Origin.Source != "s" {
				t.Errorf("error without its origin: %v", e)
			}
		}
	})
}
