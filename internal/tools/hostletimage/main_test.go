package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// TestImageRunsHostletAndItsHelpers: the image made from freshly built
// binaries loads into the engine, `hostlet version` in it prints the
// version the binary was built with, and `hostlet validate` of the
// quickstart passes, its Compose project rendered by the hostlet-compose
// beside hostlet. The image and its containers are removed after.
func TestImageRunsHostletAndItsHelpers(t *testing.T) {
	root := moduleRoot(t)
	suffix := randomHex(t)
	version := "test-image-" + suffix
	bin := t.TempDir()
	for _, c := range []struct{ name, flags string }{
		{"hostlet", "-s -w -X main.version=" + version},
		{"hostlet-compose", "-s -w"},
		{"hostlet-notify", "-s -w"},
		{"hostlet-images", "-s -w"},
		{"hostlet-sops", "-s -w"},
	} {
		// From the command's folder: hostlet-sops is a module of its own.
		build := exec.Command("go", "build", "-trimpath", "-ldflags", c.flags, "-o", filepath.Join(bin, c.name), ".")
		build.Dir = filepath.Join(root, "cmd", c.name)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/%s: %v\n%s", c.name, err, out)
		}
	}
	cli := dockertest.Client(t)
	tag := "hostlet-test-image:" + suffix
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, tag, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove image %s: %v", tag, err)
		}
	})
	if err := load(ctx, dockertest.Docker(t), tag, bin, caBundle); err != nil {
		t.Fatal(err)
	}
	if out := runImage(ctx, t, cli, tag, nil, "version"); !strings.HasPrefix(out, "hostlet "+version+"\n") {
		t.Errorf("hostlet version in the image printed %q, want hostlet %s", out, version)
	}
	manifests := filepath.Join(root, "examples", "quickstart", "manifests")
	out := runImage(ctx, t, cli, tag, []string{manifests + ":/manifests:ro"}, "validate", "/manifests")
	if !strings.Contains(out, "OK: 5 manifests in 1 sources, all valid.") {
		t.Errorf("hostlet validate of the quickstart in the image printed %q, want its 5 manifests valid", out)
	}
}

// runImage runs tag with args to its end and returns what it printed,
// failing the test unless it exits 0. The container is removed.
func runImage(ctx context.Context, t *testing.T, cli *client.Client, tag string, binds []string, args ...string) string {
	t.Helper()
	created, err := cli.ContainerCreate(ctx, &container.Config{Image: tag, Cmd: args},
		&container.HostConfig{Binds: binds, NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatalf("create a container of %s: %v", tag, err)
	}
	defer func() {
		if err := cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove container %s: %v", created.ID, err)
		}
	}()
	waitC, errC := cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start %s %v: %v", tag, args, err)
	}
	var code int64
	select {
	case w := <-waitC:
		code = w.StatusCode
	case err := <-errC:
		t.Fatalf("wait for %s %v: %v", tag, args, err)
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("logs of %s %v: %v", tag, args, err)
	}
	defer logs.Close()
	var out bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &out, logs); err != nil {
		t.Fatalf("logs of %s %v: %v", tag, args, err)
	}
	if code != 0 {
		t.Fatalf("hostlet %v in the image exited %d:\n%s", args, code, out.String())
	}
	return out.String()
}

// moduleRoot is the folder of hostlet's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
