// Package dockertest holds helpers for integration tests that run against
// the real Docker engine of this machine.
//
// Every test gets its own hostlet instance label (Instance), so test
// binaries of different packages running in parallel never see, or prune,
// each other's containers; a t.Cleanup removes every container and volume
// carrying that label with the Docker client directly, so it works even when
// the code under test is broken.
//
// Tests that need an image call TestImage, which builds the demo server
// (examples/demo) once per test binary and loads it into the engine. The
// package's TestMain must then be
//
//	func TestMain(m *testing.M) { dockertest.Main(m) }
//
// which runs the tests and afterwards removes the images and files this
// package made. There is no registry: images are built locally.
//
// No engine reachable is a test failure, never a skip: these tests are the
// proof that hostlet works against Docker.
package dockertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/imagetar"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// ImageRepo is the repository of the images TestImage loads.
const ImageRepo = "hostlet-test-demo"

// perBinary is the state one test binary shares: the demo binary and image
// are built once and removed by Main. It is the only package-level state,
// and it exists because "once per test binary" needs it.
var perBinary struct {
	inMain atomic.Bool

	binaryOnce sync.Once
	binaryDir  string
	binary     string
	binaryErr  error

	imageOnce sync.Once
	image     string
	imageErr  error
}

// Main runs the package's tests, then removes the images TestImage loaded
// and the demo binary it built. Call it as the whole body of TestMain, or
// last in it. The after functions run once the tests ended, whether they
// passed or not, in order (a package's own per-binary clean-up). A failed
// clean-up makes the test binary fail.
func Main(m *testing.M, after ...func() error) {
	perBinary.inMain.Store(true)
	code := m.Run()
	errs := []error{cleanupBinary()}
	for _, f := range after {
		errs = append(errs, f())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "dockertest: clean up after tests: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		os.Exit(code)
	}
}

func cleanupBinary() error {
	var errs []error
	if perBinary.image != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cli, err := newClient(ctx)
		if err != nil {
			errs = append(errs, err)
		} else {
			_, err := cli.ImageRemove(ctx, perBinary.image, image.RemoveOptions{Force: true, PruneChildren: true})
			if err != nil && !cerrdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("remove image %s: %w", perBinary.image, err))
			}
			_ = cli.Close()
		}
	}
	if perBinary.binaryDir != "" {
		if err := os.RemoveAll(perBinary.binaryDir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", perBinary.binaryDir, err))
		}
	}
	return errors.Join(errs...)
}

// newClient connects to the engine ($DOCKER_HOST or the local socket) and
// pings it.
func newClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("create docker client: %w", err)
	}
	if _, err := cli.Ping(ctx); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker engine at %s unreachable: %w", cli.DaemonHost(), err)
	}
	return cli, nil
}

// noEngine is the failure message when no engine answers.
const noEngine = "dockertest: integration tests need a Docker engine " +
	"(start dockerd, e.g. `nohup dockerd >/var/log/dockerd.log 2>&1 &`, or set DOCKER_HOST): %v"

// Client returns a raw Docker client for checks the runtime does not expose.
// It fails the test when no engine is reachable.
func Client(t testing.TB) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := newClient(ctx)
	if err != nil {
		t.Fatalf(noEngine, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Engine returns the engine the tests run against, as hostlet reads it
// (kind, version, builder, image store): for the checks of what an
// engine reports differently (docs/engines.md).
func Engine(t testing.TB) hruntime.Engine {
	t.Helper()
	return Docker(t).Engine()
}

// Instance returns a new instance label value, unique to this call
// ("test-" + random hex), and registers a clean-up that force-removes every
// container and volume labelled with it.
func Instance(t testing.TB) string {
	t.Helper()
	instance := "test-" + randomHex(6)
	cli := Client(t)
	t.Cleanup(func() {
		// t.Context() is already cancelled when clean-ups run.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := RemoveInstance(ctx, cli, instance); err != nil {
			t.Errorf("dockertest: clean up instance %s: %v", instance, err)
		}
	})
	return instance
}

// RemoveInstance force-removes every container, volume, network and
// built image labelled io.hostlet.instance=instance. It retries for a while: the engine refuses
// some removals while a container is between states (e.g. restarting).
func RemoveInstance(ctx context.Context, cli *client.Client, instance string) error {
	var err error
	for wait := 100 * time.Millisecond; ; wait *= 2 {
		if err = removeInstanceOnce(ctx, cli, instance); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-time.After(wait):
		}
		if wait > 5*time.Second {
			return err
		}
	}
}

func removeInstanceOnce(ctx context.Context, cli *client.Client, instance string) error {
	f := filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+instance))
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list containers of %s: %w", instance, err)
	}
	var errs []error
	for _, c := range list {
		err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s %v (%s): %w", c.ID, c.Names, c.State, err))
		}
	}
	vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list volumes of %s: %w", instance, err))...)
	}
	for _, v := range vols.Volumes {
		if err := cli.VolumeRemove(ctx, v.Name, true); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove volume %s: %w", v.Name, err))
		}
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list networks of %s: %w", instance, err))...)
	}
	for _, n := range nets {
		if err := cli.NetworkRemove(ctx, n.ID); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		}
	}
	// Images the instance built (and their other tags): labelled
	// io.hostlet.build.instance, or io.hostlet.instance before issue 30.
	ims, err := cli.ImageList(ctx, image.ListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list images of %s: %w", instance, err))...)
	}
	built, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelBuildInstance+"="+instance))})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list built images of %s: %w", instance, err))...)
	}
	ims = append(ims, built...)
	for _, im := range ims {
		if _, err := cli.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s %v: %w", im.ID, im.RepoTags, err))
		}
	}
	return errors.Join(errs...)
}

// Docker returns a runtime for a fresh Instance, closed at the end of the
// test. It fails the test (never skips it) when no engine is reachable.
func Docker(t testing.TB) *hruntime.Docker {
	t.Helper()
	return DockerFor(t, Instance(t))
}

// DockerFor returns a runtime for the given instance, closed at the end of
// the test. Use it with Instance for a second runtime of another instance.
func DockerFor(t testing.TB, instance string) *hruntime.Docker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := hruntime.New(ctx, "", instance, Logger(t), hruntime.WithOwnerKey([]byte("test owner key of "+instance)))
	if err != nil {
		t.Fatalf(noEngine, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Logger returns a debug-level logger writing to the test's output. Lines
// logged after the test ended (by goroutines outliving it) are dropped
// rather than panicking.
func Logger(t testing.TB) *slog.Logger {
	w := &testWriter{out: t.Output()}
	t.Cleanup(w.close)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	mu   sync.Mutex
	out  io.Writer
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return len(p), nil
	}
	return w.out.Write(p)
}

func (w *testWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}

// DemoBinary returns the path of the demo server (examples/demo) built as a
// static linux binary, built once per test binary. Needs Main.
func DemoBinary(t testing.TB) string {
	t.Helper()
	needMain(t)
	perBinary.binaryOnce.Do(func() {
		perBinary.binaryDir, perBinary.binary, perBinary.binaryErr = buildDemo()
	})
	if perBinary.binaryErr != nil {
		t.Fatalf("dockertest: build demo server: %v", perBinary.binaryErr)
	}
	return perBinary.binary
}

func needMain(t testing.TB) {
	t.Helper()
	if !perBinary.inMain.Load() {
		t.Fatal("dockertest: call dockertest.Main(m) from the package's TestMain; it removes the images and files made for the tests")
	}
}

func buildDemo() (dir, binary string, err error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMOD: %w", err)
	}
	modFile := strings.TrimSpace(string(gomod))
	if modFile == "" || modFile == os.DevNull {
		return "", "", errors.New("go env GOMOD: not inside a module")
	}
	dir, err = os.MkdirTemp("", "dockertest-")
	if err != nil {
		return "", "", fmt.Errorf("make temp dir: %w", err)
	}
	binary = filepath.Join(dir, "demo")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", binary, "./examples/demo")
	cmd.Dir = filepath.Dir(modFile)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goruntime.GOARCH)
	if out, err := cmd.CombinedOutput(); err != nil {
		return dir, "", fmt.Errorf("go build ./examples/demo in %s: %w\n%s", cmd.Dir, err, out)
	}
	return dir, binary, nil
}

// TestImage returns the reference of an image ("hostlet-test-demo:<random>")
// holding only the demo server as /demo, its entrypoint. It is built and
// loaded once per test binary and removed by Main. Run it with command
// ["/demo", "pause"] for an infra container, and exec "/demo probe-ok" or
// "/demo probe-fail" for exec probes (the image has no shell).
func TestImage(t testing.TB) string {
	t.Helper()
	binary := DemoBinary(t)
	perBinary.imageOnce.Do(func() {
		perBinary.image, perBinary.imageErr = loadTestImage(binary)
	})
	if perBinary.imageErr != nil {
		t.Fatalf("dockertest: load test image: %v", perBinary.imageErr)
	}
	return perBinary.image
}

func loadTestImage(binary string) (string, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("read demo binary: %w", err)
	}
	ref := ImageRepo + ":" + randomHex(6)
	var archive bytes.Buffer
	err = imagetar.Write(&archive, ref, []imagetar.File{{Path: "/demo", Mode: 0o755, Data: data}}, []string{"/demo"}, nil)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli, err := newClient(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	// Remember it for Main before the engine may have it.
	perBinary.image = ref
	if err := hruntime.LoadArchive(ctx, cli, &archive); err != nil {
		return "", fmt.Errorf("load %s: %w", ref, err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return ref, fmt.Errorf("load %s: image not there after load: %w", ref, err)
	}
	return ref, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// PausePod is the manifest of pod id with one container, "app", running
// image's pause process (a TestImage; never pulled, 1 s to stop). extra
// holds more fields of that container, one per line, unindented (e.g.
// "memory: 64Mi"); "" adds none.
func PausePod(id, image, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: v1beta1\nid: %s\nterminationGracePeriodSeconds: 1\ncontainers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    command: [/demo, pause]\n", id, image)
	for line := range strings.Lines(extra) {
		b.WriteString("    " + strings.TrimSuffix(line, "\n") + "\n")
	}
	return b.String()
}
