package agentrun_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
)

// TestFilesPathOutsideTheFolderLeavesTheRestApplied (issue 30, finding 4):
// a files volume item at path "/" made validation loop forever, and
// `hostlet run` stopped applying every change of every pod. Now the pod is
// rejected (its reason names the file, the pod and the field), the good pod
// of the same file and the pods of another source run, and a later change
// of the other source is applied too.
func TestFilesPathOutsideTheFolderLeavesTheRestApplied(t *testing.T) {
	e := newEnv(t)
	mixed, other := filepath.Join(e.dir, "mixed"), filepath.Join(e.dir, "other")
	for _, d := range []string{mixed, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bad := e.pod("bad", "1") + `volumes:
  - name: conf
    files: {source: conf, items: [{path: a.conf, data: YQ==}, {path: /, data: Yg==}]}
`
	write := func(path, data string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(mixed, "pods.yaml"), bad+"---\n"+e.pod("good", "1"))
	write(filepath.Join(other, "pods.yaml"), e.pod("good2", "1"))
	cfg := e.config(t, fmt.Sprintf("sources:\n  - {name: mixed, type: file, path: %s, interval: 1s}\n  - {name: other, type: file, path: %s, interval: 1s}\n", mixed, other))
	a := e.start(t, cfg)
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		return len(d.Rejected) == 1, fmt.Sprintf("rejected %v", d.Rejected)
	})
	why := strings.Join(doc.Rejected[0].Reasons, "; ")
	for _, want := range []string{"mixed:", "pods.yaml", `pod "bad"`, "volumes[0].files.items[1].path"} {
		if !strings.Contains(why, want) {
			t.Errorf("rejection %q does not name %s", why, want)
		}
	}
	e.waitPods(t, 60*time.Second, "good", "good2")

	write(filepath.Join(other, "pods.yaml"), e.pod("good2", "1")+"---\n"+e.pod("good3", "1"))
	e.waitPods(t, 60*time.Second, "good", "good2", "good3")
}
