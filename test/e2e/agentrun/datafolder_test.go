package agentrun_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
)

// TestComposeDataFolderIsKept: a relative bind the project does not hold
// (./data) is a writable folder on the host, under compose.dataDir in the
// instance's folder, made on first use; what the service writes there
// survives a recreate (a config file of the project edited), a new
// revision, a hostlet restart, and the project's removal; and the
// project, back, finds it again.
func TestComposeDataFolderIsKept(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	port := testkit.FreePort(t)
	project := filepath.Join(tree, "app")
	writeProject := func(revision string) {
		testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), fmt.Sprintf(`name: %s
services:
  web:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    environment: {REVISION: %q}
    ports: ["127.0.0.1:%d:8080"]
    volumes: ["./data:/data", "./conf/app.conf:/etc/app.conf"]
`, proj, e.image, revision, port))
	}
	writeProject("one")
	testkit.WriteFile(t, filepath.Join(project, "conf", "app.conf"), "version one")
	// A pod beside, so that the project's removal leaves the source not
	// empty (an empty source keeps its last good set).
	testkit.WriteFile(t, filepath.Join(tree, "keep.yaml"), e.pod(proj+"-keep", "1"))
	dataDir := filepath.Join(e.dir, "data")
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\n  dataDir: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), dataDir, tree))
	a := e.start(t, cfg)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	first := e.waitPods(t, 60*time.Second, proj+"-keep", proj+"-web")[1:]
	testkit.WaitHTTP(t, 30*time.Second, "GET", url+"read?path=/etc/app.conf", "", "version one")
	if code, body, err := testkit.HTTP("POST", url+"write?path=/data/note", "kept"); err != nil || code != 200 {
		t.Fatalf("write /data/note: %d %s %v", code, body, err)
	}
	onHost := filepath.Join(dataDir, e.instance, proj, "data", "note")
	if b, err := os.ReadFile(onHost); err != nil || string(b) != "kept" {
		t.Fatalf("%s: %q %v, want what the service wrote", onHost, b, err)
	}
	steps := []struct {
		what   string
		change func()
	}{
		{"a config file of the project edited (a recreate)", func() {
			testkit.WriteFile(t, filepath.Join(project, "conf", "app.conf"), "version two")
		}},
		{"a new revision", func() { writeProject("two") }},
		{"a hostlet restart", func() {
			a.Stop()
			a = e.start(t, cfg)
		}},
	}
	last := first[0].ID
	for _, st := range steps {
		st.change()
		testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
			bs := e.containers(t)[1:]
			if st.what == "a hostlet restart" {
				return len(bs) == 1 && bs[0].ID == last && bs[0].State == "running", fmt.Sprintf("containers %+v, want %s kept", bs, last)
			}
			return len(bs) == 1 && bs[0].ID != last && bs[0].State == "running", fmt.Sprintf("containers %+v, want a new one", bs)
		})
		last = e.containers(t)[1].ID
		testkit.WaitHTTP(t, 30*time.Second, "GET", url+"read?path=/data/note", "", "kept")
	}
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	e.waitPods(t, 60*time.Second, proj+"-keep")
	if b, err := os.ReadFile(onHost); err != nil || string(b) != "kept" {
		t.Fatalf("after the project's removal, %s: %q %v, want it kept", onHost, b, err)
	}
	writeProject("three")
	testkit.WriteFile(t, filepath.Join(project, "conf", "app.conf"), "version three")
	e.waitPods(t, 60*time.Second, proj+"-keep", proj+"-web")
	testkit.WaitHTTP(t, 30*time.Second, "GET", url+"read?path=/data/note", "", "kept")
}
