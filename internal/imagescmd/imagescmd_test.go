package imagescmd_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/imagescmd"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/internal/testkit/registrytest"
	hsync "github.com/hostlet/hostlet/sync"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// run runs `hostlet images ARGS` and returns its output and exit status.
func run(t testing.TB, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := imagescmd.Run(t.Context(), args, &out, &out)
	return out.String(), code
}

// check and update against a real registry the engine pushed to: check
// says what is due (exit 2) and changes nothing; update edits the files
// (a native manifest and a Compose project's .env); a second check finds
// nothing due (exit 0); an unreachable registry fails only its images.
func TestCheckThenUpdateAgainstARealRegistry(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	reg.Push(t, dockertest.Client(t), "shop/web", []string{"1.4.2", "1.4.3", "1.5.0", "2.0.0", "2.0.0-rc.1", "1.4.3-alpine", "latest"}, nil)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	dir := t.TempDir()
	native := "version: v1beta1\nid: web\ncontainers:\n  - name: app\n    image: " + reg.Addr + "/shop/web:1.4.2  # the shop\n    imagePolicy: {semver: \"~1.4\"}\n"
	compose := "services:\n  api:\n    image: " + reg.Addr + "/shop/web:${API_TAG}\n    x-hostlet-image-policy: {semver: \"^1\", pin: digest}\n"
	gone := "version: v1beta1\nid: gone\ncontainers:\n  - {name: app, image: \"127.0.0.1:1/shop/gone:1.0.0\", imagePolicy: {semver: \"^1\"}}\n"
	write(t, dir, "web.yaml", native)
	write(t, dir, "shop/compose.yaml", compose)
	write(t, dir, "shop/.env", "API_TAG=1.4.2\n")

	out, code := run(t, "check", "--source", "apps="+dir)
	if code != 2 || !strings.Contains(out, "1.4.2 -> 1.4.3") || !strings.Contains(out, "skipped 1.5.0: outside ~1.4") {
		t.Fatalf("check: exit %d\n%s\nwant exit 2, 1.4.2 -> 1.4.3 and the skipped 1.5.0", code, out)
	}
	if got := read(t, dir, "web.yaml"); got != native {
		t.Fatalf("check changed web.yaml:\n%s", got)
	}

	out, code = run(t, "update", "--source", "apps="+dir, "-o", "json")
	var rep struct {
		Images []struct{ From, To, Digest string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 2 || len(rep.Images) != 2 {
		t.Fatalf("update: exit %d, %v\n%s", code, err, out)
	}
	var diff struct{ Diff string }
	if err := json.Unmarshal([]byte(out), &diff); err != nil || !strings.Contains(diff.Diff, "--- apps:web.yaml\n@@ line 5\n-    image: "+reg.Addr+"/shop/web:1.4.2  # the shop\n+    image: "+reg.Addr+"/shop/web:1.4.3  # the shop\n") {
		t.Errorf("update's diff: %q, %v", diff.Diff, err)
	}
	if want := strings.Replace(native, "web:1.4.2  #", "web:1.4.3  #", 1); read(t, dir, "web.yaml") != want {
		t.Errorf("web.yaml after the update:\n%s\nwant:\n%s", read(t, dir, "web.yaml"), want)
	}
	digest := rep.Images[0].Digest + rep.Images[1].Digest // the compose service's: the other pins no digest
	if got, want := read(t, dir, "shop/.env"), "API_TAG=1.5.0@"+digest+"\n"; digest == "" || got != want {
		t.Errorf(".env after the update: %q, want %q (pinned: the variable holds the tag and its digest)", got, want)
	}

	if out, code = run(t, "check", "--source", "apps="+dir); code != 0 {
		t.Errorf("check after the update: exit %d\n%s\nwant 0", code, out)
	}
	write(t, dir, "gone.yaml", gone)
	out, code = run(t, "check", "--source", "apps="+dir)
	if code != 1 || !strings.Contains(out, "gone/app") || !strings.Contains(out, "web/app "+reg.Addr+"/shop/web: 1.4.3, nothing newer allowed") {
		t.Errorf("check with an unreachable registry: exit %d\n%s\nwant exit 1, gone/app failed, web/app read", code, out)
	}
}

func write(t testing.TB, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// With --config, update edits nothing unless every host's sources still
// validate: the error names the file and field, and the files are put
// back as they were.
func TestUpdateRefusesATreeThatDoesNotValidate(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	reg.Push(t, dockertest.Client(t), "shop/web", []string{"1.4.2", "1.4.3"}, nil)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	dir := t.TempDir()
	native := "version: v1beta1\nid: web\ncontainers:\n  - name: app\n    image: " + reg.Addr + "/shop/web:1.4.2\n    imagePolicy: {semver: \"~1.4\"}\n"
	write(t, dir, "web.yaml", native)
	cfgFile := filepath.Join(t.TempDir(), "host.yaml")
	write(t, filepath.Dir(cfgFile), "host.yaml", "hostname: web-1\ninstance: images-test\nsources:\n  - {name: apps, type: file, path: /nonexistent}\n")

	if out, code := run(t, "update", "--source", "apps="+dir, "--config", cfgFile); code != 2 || read(t, dir, "web.yaml") == native {
		t.Fatalf("update of a valid tree: exit %d\n%s", code, out)
	}
	write(t, dir, "web.yaml", native)
	write(t, dir, "broken.yaml", "version: v1beta1\nid: broken\ncontainers:\n  - name: app\n")
	out, code := run(t, "update", "--source", "apps="+dir, "--config", cfgFile)
	if code != 1 || !strings.Contains(out, "host web-1") || !strings.Contains(out, "broken.yaml") || !strings.Contains(out, "containers[0].image") {
		t.Errorf("update of an invalid tree: exit %d\n%s\nwant exit 1 naming the host, file and field", code, out)
	}
	if got := read(t, dir, "web.yaml"); got != native {
		t.Errorf("web.yaml after a refused update:\n%s\nwant it as it was", got)
	}
}

// A host config with etcd endpoints: the rollbacks its host reports in
// etcd are skipped as those of --status-url are.
func TestRollbacksReadFromTheHostsStatusInEtcd(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	reg.Push(t, dockertest.Client(t), "shop/web", []string{"1.4.2", "1.4.3"}, nil)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	srv := etcdtest.Start(t)
	doc := api.Document{Hostname: "web-2", Pods: []hsync.PodStatus{{ID: "web", Rollout: &hsync.Rollout{
		State: hsync.RolloutRolledBack, Revision: "0123456789abcdef", Reason: "container app keeps crashing",
		Images: map[string]string{"app": reg.Addr + "/shop/web:1.4.3"}}}}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{srv.Endpoint}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	statusKey, _, _ := reporter.Keys("/fleet", "web-2")
	if _, err := cli.Put(t.Context(), statusKey, string(data)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write(t, dir, "web.yaml", "version: v1beta1\nid: web\ncontainers:\n  - name: app\n    image: "+reg.Addr+"/shop/web:1.4.2\n    imagePolicy: {semver: \"~1.4\"}\n")
	cfgDir := t.TempDir()
	write(t, cfgDir, "web-2.yaml", "hostname: web-2\ninstance: images-test\netcd: {endpoints: ["+srv.Endpoint+"], prefix: /fleet}\nsources:\n  - {name: apps, type: file, path: /nonexistent}\n")
	out, code := run(t, "check", "--source", "apps="+dir, "--config", filepath.Join(cfgDir, "web-2.yaml"))
	if code != 0 || !strings.Contains(out, "skipped 1.4.3: rolled back on web-2 at 0123456789ab: container app keeps crashing") {
		t.Errorf("check: exit %d\n%s\nwant exit 0 and 1.4.3 skipped for web-2's rollback", code, out)
	}
}

// --commit refuses, before editing anything, a source outside a git
// repository and a message template that fails on the real updates.
func TestCommitProblemsAreFoundBeforeAnyEdit(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	reg.Push(t, dockertest.Client(t), "shop/web", []string{"1.4.2", "1.4.3"}, nil)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	native := "version: v1beta1\nid: web\ncontainers:\n  - name: app\n    image: " + reg.Addr + "/shop/web:1.4.2\n    imagePolicy: {semver: \"~1.4\"}\n"
	for _, tc := range []struct {
		name, want string
		args       []string
	}{
		{name: "not a repository", want: "not in a git repository"},
		{name: "a template that fails", want: "--message-template", args: []string{"--message-template", "{{range .Updates}}{{.Nope}}{{end}}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "web.yaml", native)
			if tc.args != nil {
				if out, err := exec.Command("git", "init", "--quiet", dir).CombinedOutput(); err != nil {
					t.Fatalf("git init: %v\n%s", err, out)
				}
			}
			out, code := run(t, append([]string{"update", "--source", "apps=" + dir, "--commit"}, tc.args...)...)
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d\n%s\nwant exit 1 and %q", code, out, tc.want)
			}
			if got := read(t, dir, "web.yaml"); got != native {
				t.Errorf("web.yaml edited although the commit could not be made:\n%s", got)
			}
		})
	}
}

// A --status-url that answers badly is an error that names it without
// the password it carries.
func TestStatusURLErrorsHideItsPassword(t *testing.T) {
	dir := t.TempDir()
	for _, u := range []string{"http://ci:s3cret-pw@127.0.0.1:1", "ftp://host", "::"} {
		out, code := run(t, "check", "--source", "apps="+dir, "--status-url", u)
		if code != 1 || strings.Contains(out, "s3cret-pw") {
			t.Errorf("--status-url %s: exit %d\n%s\nwant exit 1 and no password", u, code, out)
		}
	}
}
