//go:build !enginematrix

// The image updater's end-to-end test runs on the host's engine (make
// test), not in the engine matrix (scripts/test-engines.sh): it needs
// Debian's docker-registry beside the engine, and Podman pulls from a
// plain-HTTP registry only when configured to.

package gitrun_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/imagescmd"
	"github.com/hostlet/hostlet/internal/imagetar"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	"github.com/hostlet/hostlet/internal/testkit/registrytest"
)

// The image updater end to end: a registry the engine pushed to, a git
// server over smart HTTP, hostlet running the repository. update --commit
// moves web from 1.4.2 to 1.4.3 and the host converges on it; 1.4.3
// crashes and is rolled back; the next update names the rollback and
// commits nothing; the operator reverts the bump, and the next update
// does not propose 1.4.3 again, naming the rollback; 1.4.4 is pushed and
// the next update moves to it; the host converges; a last update with
// nothing new commits nothing.
func TestImagesUpdateEndToEnd(t *testing.T) {
	t.Parallel()
	e := newE2E(t, true)
	cli := dockertest.Client(t)
	reg := registrytest.Start(t, registrytest.Options{})
	demo, err := os.ReadFile(dockertest.DemoBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	push := func(tag string, crashes bool) {
		cfg := imagetar.Config{Entrypoint: []string{"/demo", "pause"}}
		if crashes {
			cfg = imagetar.Config{Entrypoint: []string{"/demo"}, Env: []string{"EXIT_AFTER=100ms", "LISTEN=127.0.0.1:0"}}
		}
		reg.PushImage(t, cli, "shop/web:"+tag, []imagetar.File{{Path: "/demo", Mode: 0o755, Data: demo}}, cfg)
	}
	push("1.4.2", false)
	push("1.4.3", true)
	repo := reg.Addr + "/shop/web"
	t.Cleanup(func() { removeImages(cli, repo+":1.4.2", repo+":1.4.3", repo+":1.4.4") })

	manifest := func(tag string) string {
		return fmt.Sprintf("# The shop's web pod.\nversion: v1beta1\nid: web\nminReadySeconds: 2\nrollback: Auto\nterminationGracePeriodSeconds: 1\ncontainers:\n  - name: app\n    image: %s:%s   # moved by hostlet images\n    imagePolicy: {semver: \"~1.4\"}\n", repo, tag)
	}
	e.repo.Change("web 1.4.2", map[string]string{"manifests/web.yaml": manifest("1.4.2")})
	cfg := e.config("1s")
	e.start(cfg)
	e.waitImage("web", repo+":1.4.2", "Complete")
	statusURL := "http://" + cfg.Listen

	// A checkout over HTTP, as a CI job has: update commits and pushes.
	clone := cloneOverHTTP(t, e)
	out, code := images(t, "update", "--source", "fleet="+filepath.Join(clone, "manifests"), "--commit", "--status-url", statusURL)
	if code != 2 || !strings.Contains(out, "1.4.2 -> 1.4.3") || !strings.Contains(out, "committed and pushed") {
		t.Fatalf("first update: exit %d\n%s", code, out)
	}
	if got := e.repo.GitBare("show", "main:manifests/web.yaml"); got != strings.TrimSpace(manifest("1.4.3")) {
		t.Fatalf("the pushed manifest:\n%s\nwant:\n%s", got, manifest("1.4.3"))
	}
	// 1.4.3 crashes: the host rolls it back to 1.4.2.
	doc := e.waitImage("web", repo+":1.4.2", "RolledBack")
	bump := doc.Pods[0].Rollout.Revision

	out, code = images(t, "update", "--source", "fleet="+filepath.Join(clone, "manifests"), "--commit", "--status-url", statusURL)
	if code != 0 || !strings.Contains(out, "the current 1.4.3: rolled back on e2e-host at "+bump[:12]) || strings.Contains(out, "committed") {
		t.Fatalf("update after the rollback: exit %d\n%s\nwant exit 0, the rollback named, no commit", code, out)
	}
	// The operator reverts the bump; the host applies the revert. The
	// next run does not propose 1.4.3 again (argocd-image-updater#1249).
	e.repo.Git("pull", "--quiet", "--ff-only", "origin", "main")
	e.repo.Git("revert", "--no-edit", "HEAD")
	e.repo.Push()
	e.waitImage("web", repo+":1.4.2", "Complete")
	gitRun(t, clone, "pull", "--quiet", "--ff-only")
	out, code = images(t, "update", "--source", "fleet="+filepath.Join(clone, "manifests"), "--commit", "--status-url", statusURL)
	if code != 0 || !strings.Contains(out, "skipped 1.4.3: rolled back on e2e-host at "+bump[:12]+": container app keeps crashing") || strings.Contains(out, "committed") {
		t.Fatalf("update after the revert: exit %d\n%s\nwant exit 0, 1.4.3 skipped naming the rollback, no commit", code, out)
	}

	push("1.4.4", false)
	out, code = images(t, "update", "--source", "fleet="+filepath.Join(clone, "manifests"), "--commit", "--status-url", statusURL)
	if code != 2 || !strings.Contains(out, "1.4.2 -> 1.4.4") {
		t.Fatalf("update after 1.4.4: exit %d\n%s", code, out)
	}
	e.waitImage("web", repo+":1.4.4", "Complete")
	head := e.repo.GitBare("rev-parse", "main")
	if out, code = images(t, "update", "--source", "fleet="+filepath.Join(clone, "manifests"), "--commit", "--status-url", statusURL); code != 0 {
		t.Fatalf("update with nothing new: exit %d\n%s", code, out)
	}
	if got := e.repo.GitBare("rev-parse", "main"); got != head {
		t.Errorf("an update with nothing new pushed %s (was %s)", got, head)
	}
}

// images runs `hostlet images ARGS`.
func images(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := imagescmd.Run(t.Context(), args, &out, &out)
	return out.String(), code
}

// waitImage waits until pod runs image (its app container, running) and,
// when state is given, its rollout is in that state.
func (e *e2e) waitImage(pod, image, state string) api.Document {
	e.t.Helper()
	var doc api.Document
	testkit.WaitFor(e.t, e2eTimeout, func() (bool, string) {
		d, err := e.status()
		if err != nil {
			return false, err.Error()
		}
		doc = d
		if len(d.Pods) != 1 || d.Pods[0].ID != pod {
			return false, fmt.Sprintf("pods %+v", d.Pods)
		}
		p := d.Pods[0]
		if state != "" && (p.Rollout == nil || p.Rollout.State != state) {
			return false, fmt.Sprintf("rollout %+v, want %s", p.Rollout, state)
		}
		c, dup := e.listContainers()
		if dup != "" {
			return false, dup
		}
		img, running := e.imageOf(c[pod].ID)
		return img == image && running, fmt.Sprintf("pod %s runs %s (running %v), want %s", pod, img, running, image)
	})
	return doc
}

func (e *e2e) imageOf(id string) (string, bool) {
	if id == "" {
		return "", false
	}
	j, err := e.docker.ContainerInspect(e.t.Context(), id)
	if err != nil {
		return "", false
	}
	return j.Config.Image, j.State.Running
}

// cloneOverHTTP clones the repository from the test's git server, with
// the credentials in the URL (a CI job's checkout).
func cloneOverHTTP(t *testing.T, e *e2e) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	url := strings.Replace(e.srv.RepoURL(e.repo), "http://", "http://"+httpUser+":"+httpPassword+"@", 1)
	gitRun(t, "", "clone", "--quiet", url, dir)
	return dir
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gittest.Env(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// removeImages removes the images the engine pulled for the test
// (forced: the test's containers may still be there).
func removeImages(cli *client.Client, refs ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ref := range refs {
		_, _ = cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true})
	}
}
