package sources

import "testing"

// FuzzDecodeSaved: any saved set (a damaged file, an older hostlet's,
// once the seal is open) decodes to the source's own set, each manifest
// with an id and each build context restored, or fails; it never panics.
func FuzzDecodeSaved(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","type":"file","revision":"r1","manifests":[{"Origin":{"source":"a","file":"f.yaml"},"Manifest":{"version":"v1beta1","id":"web","containers":[{"name":"app","image":"busybox"}]}}]}`,
		`{"name":"a","manifests":[{"Manifest":{"id":"web","containers":[{"name":"app","build":{"context":".","files":{"source":".","items":[],"hash":"` + contextRef + `d1"}}}]}}],"contexts":{"d1":{"source":".","items":[{"path":"Dockerfile","data":"RlJPTSBzY3JhdGNo"}]}}}`,
		`{"name":"a","manifests":[{"Manifest":{"id":"web","containers":[{"build":{"files":{"hash":"` + contextRef + `missing"}}}]}}]}`,
		`{"name":"a","good":{"web":{"Sourced":{"Manifest":{"id":"web","containers":[{"build":{"files":{"hash":"` + contextRef + `d1"}}}]}}}},"contexts":{"d1":null}}`,
		`{"name":"b"}`, `{"name":"a","manifests":[{}]}`, `{"name":"a","manifests":null}`, `[]`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var set savedSet
		if err := decodeSaved(b, "a", &set); err != nil {
			return
		}
		if set.Name != "a" {
			t.Fatalf("the saved set of %q read as source a's", set.Name)
		}
		for i, s := range set.Manifests {
			if s.Manifest.ID == "" {
				t.Fatalf("manifest %d without an id", i)
			}
		}
		if set.Contexts != nil {
			t.Fatal("the contexts were not restored into the manifests")
		}
	})
}
