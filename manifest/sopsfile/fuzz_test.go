package sopsfile

import (
	"path/filepath"
	"slices"
	"testing"
)

// FuzzDetect: whatever a file holds and whatever it is named, Detect
// ends, never panics, and gives a format of sops's when it recognises
// the file.
func FuzzDetect(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("testdata", "*.sops"))
	for _, p := range paths {
		f.Add(filepath.Base(p[:len(p)-len(".sops")]), readTestdata(f, filepath.Base(p)))
	}
	f.Add("a.yaml", []byte("sops:\n  mac: x\n  age: [{recipient: a}]\n"))
	f.Add("a.env", []byte("sops_mac=x\nsops_age__list_0__map_recipient=age1\n"))
	f.Add("a.ini", []byte("[sops]\nmac = x\n"))
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		info, ok, err := Detect(name, data)
		if !ok {
			if err != nil {
				t.Fatalf("an error for a file that is not SOPS: %v", err)
			}
			return
		}
		if err == nil && !slices.Contains([]string{YAML, JSON, Dotenv, INI, Binary}, info.Format) {
			t.Fatalf("format %q", info.Format)
		}
	})
}
