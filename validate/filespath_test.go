package validate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// filesPathPod is a pod with a files volume of two items, the second at
// path p.
func filesPathPod(t *testing.T, id, p string) manifest.Sourced {
	t.Helper()
	y := `version: v1beta1
id: ` + id + `
volumes:
  - name: conf
    files: {source: conf, items: [{path: a.conf, data: YQ==}, {path: ` + p + `, data: Yg==}]}
containers:
  - name: app
    image: example.org/app:1
    volumeMounts: [{name: conf, mountPath: /etc/app, readOnly: true}]
`
	ms, err := manifest.Decode([]byte(y), manifest.Origin{Source: "local", File: "pods.yaml"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("decode: %v (%d manifests)", err, len(ms))
	}
	return ms[0]
}

// TestFilesPathOutsideTheFolderRejectedPromptly (issue 30, finding 4): a
// files volume item whose path starts with "/" made validation loop
// forever (path.Dir("/") is "/"). Every such path is now rejected within
// milliseconds, with an error naming the file, the pod and the field, and
// the other pod of the set is accepted.
func TestFilesPathOutsideTheFolderRejectedPromptly(t *testing.T) {
	for _, p := range []string{`/`, `/x`, `/a/b/c`, `//`, `"/a/"`, `../x`, `a/../../b`, `"a//b"`, `./a`, `"a/"`} {
		t.Run(p, func(t *testing.T) {
			bad, good := filesPathPod(t, "bad", p), filesPathPod(t, "good", "b/c.conf")
			good.Origin.Index = 1
			done := make(chan validate.Result, 1)
			start := time.Now()
			go func() {
				done <- validate.Set([]manifest.Snapshot{{Name: "local", Manifests: []manifest.Sourced{bad, good}}}, validate.Options{})
			}()
			var res validate.Result
			select {
			case res = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("validation of files path %s did not return within 5s", p)
			}
			if d := time.Since(start); d > 500*time.Millisecond {
				t.Errorf("validation of files path %s took %v", p, d)
			}
			if len(res.Accepted) != 1 || res.Accepted[0].Manifest.ID != "good" {
				t.Fatalf("accepted %v, want the good pod alone (rejected %v)", res.Accepted, res.Rejected)
			}
			if len(res.Rejected) != 1 || res.Rejected[0].ID != "bad" {
				t.Fatalf("rejected %v, want the bad pod", res.Rejected)
			}
			msg := strings.Join(res.Rejected[0].Reasons, "; ")
			for _, want := range []string{"pods.yaml", `pod "bad"`, "volumes[0].files.items[1].path"} {
				if !strings.Contains(msg, want) {
					t.Errorf("reason %q does not name %s", msg, want)
				}
			}
		})
	}
}
