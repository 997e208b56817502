package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/imagetar"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// runLabel marks every container the run creates, whoever creates it (the
// floor directly, hostlet through the pods' labels, compose through the
// services' labels); its value is the run ID.
const runLabel = "hostlet-bench-run"

// envName is the variable the update step changes; /env?name=envName
// answers its value.
const envName = "BENCH_VALUE"

// imageRepo is the repository of the demo image the run loads; the tag is
// the run ID.
const imageRepo = "hostlet-bench-demo"

// composeProjectPrefix starts every compose project name of a run.
const composeProjectPrefix = "hostletbench"

func newDockerClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ping, err := cli.Ping(ctx)
	if err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker engine unreachable (start it: nohup dockerd >/var/log/dockerd.log 2>&1 &): %w", err)
	}
	cli.NegotiateAPIVersionPing(ping)
	return cli, nil
}

// goBuild builds a static binary of pkg into out, as `make build` does
// (-trimpath, the default tags, -s -w, CGO_ENABLED=0).
func goBuild(ctx context.Context, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-tags", "grpcnotrace,nethttpomithttp2", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, buf.String())
	}
	return nil
}

// loadDemoImage builds examples/demo and loads it as ref, with no registry
// and no `docker build`.
func loadDemoImage(ctx context.Context, cli *client.Client, dir, ref string) error {
	bin := filepath.Join(dir, "demo")
	if err := goBuild(ctx, "./examples/demo", bin); err != nil {
		return err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := imagetar.Write(&buf, ref, []imagetar.File{{Path: "/demo", Mode: 0o755, Data: data}}, []string{"/demo"}, nil); err != nil {
		return err
	}
	return loadImage(ctx, cli, ref, &buf)
}

// pauseRepo is the repository of the run's pause image; the tag is the
// run ID.
const pauseRepo = "hostlet-bench-pause"

// loadPauseImage loads, as ref, the pause image hostlet would build from
// the binary bin (agent.PauseImage, internal/agent/pause.go): the binary
// alone as /hostlet, entrypoint `/hostlet pause`, no env; the same layer
// and config, so the same image, under a tag of the run's own, which the
// run removes (hostlet's own hostlet-pause:<hash> tag may be shared with
// other hostlets of the same build on this engine). Every hostlet of the
// run is configured with it (docker.infraImage), and the floor's infra
// containers use it too.
func loadPauseImage(ctx context.Context, cli *client.Client, bin, ref string) error {
	f, err := imagetar.FromDisk(bin, "/hostlet", 0o755)
	if err != nil {
		return fmt.Errorf("pause image from %s: %w", bin, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(imagetar.Write(pw, ref, []imagetar.File{f}, []string{"/hostlet", "pause"}, nil))
	}()
	err = loadImage(ctx, cli, ref, pr)
	pr.CloseWithError(errors.New("image load ended"))
	return err
}

// loadImage loads the image tar read from r and checks that ref is there.
func loadImage(ctx context.Context, cli *client.Client, ref string, r io.Reader) error {
	if err := hruntime.LoadArchive(ctx, cli, r); err != nil {
		return fmt.Errorf("load image %s: %w", ref, err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("image %s not there after load: %w", ref, err)
	}
	return nil
}

// countContainers counts the containers (running or not) matching one
// label filter ("key=value").
func countContainers(ctx context.Context, cli *client.Client, label string) (int, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return 0, err
	}
	return len(list), nil
}

// containerIDs lists the IDs of the containers matching label, sorted as
// the engine returns them.
func containerIDs(ctx context.Context, cli *client.Client, label string) ([]string, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(list))
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// waitNoContainers waits until no container matches label, and returns
// when it saw that. It counts again at each destroy event of such a
// container, and every 100 ms should an event go missing (one before the
// stream began), so that the time is the last removal's, not up to a
// poll interval later (±50 ms on a step of one or two seconds).
func waitNoContainers(ctx context.Context, cli *client.Client, label string, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	destroyed, streamErr := cli.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)), filters.Arg("event", string(events.ActionDestroy)), filters.Arg("label", label))})
	last := -1
	for {
		n, err := countContainers(ctx, cli, label)
		if err == nil && n == 0 {
			return time.Now(), nil
		}
		if err == nil {
			last = n
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("%d containers with %s still there: %w", last, label, ctx.Err())
		case <-destroyed:
		case <-streamErr:
			// Polling alone from here on.
			destroyed, streamErr = nil, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitNetworkGone waits, at most timeout, until network name is gone:
// hostlet removes the network of a Compose project it no longer has
// once the project's containers are removed.
func waitNetworkGone(ctx context.Context, cli *client.Client, name string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		_, err := cli.NetworkInspect(ctx, name, network.InspectOptions{})
		if cerrdefs.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("network %s still there %s after its project's containers were removed (last inspect: %v): %w", name, timeout, err, ctx.Err())
		case <-poll.C:
		}
	}
}

// removeByLabel force-removes the containers, then the networks and
// volumes, matching each label filter.
func removeByLabel(ctx context.Context, cli *client.Client, labels ...string) error {
	var errs []error
	for _, l := range labels {
		f := filters.NewArgs(filters.Arg("label", l))
		list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		sem := make(chan struct{}, 4)
		for _, c := range list {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !strings.Contains(err.Error(), "No such container") && !strings.Contains(err.Error(), "already in progress") {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	for _, l := range labels {
		f := filters.NewArgs(filters.Arg("label", l))
		nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
		if err != nil {
			errs = append(errs, err)
		}
		for _, n := range nets {
			if err := removeNetwork(ctx, cli, n.ID); err != nil {
				errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
			}
		}
		vols, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
		if err != nil {
			errs = append(errs, err)
		}
		for _, v := range vols.Volumes {
			if err := cli.VolumeRemove(ctx, v.Name, true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// removeNetwork removes a network, retrying for a while when the engine
// still counts an endpoint on it (it may lag behind a container removal).
func removeNetwork(ctx context.Context, cli *client.Client, id string) error {
	var err error
	for range 10 {
		if err = cli.NetworkRemove(ctx, id); err == nil || cerrdefs.IsNotFound(err) {
			return nil
		}
		if !strings.Contains(err.Error(), "active endpoints") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("%w (no container is attached: a stale endpoint in the engine's network store, which only a dockerd restart clears)", err)
}

// removeImage removes one of the run's images (demo, pause).
func removeImage(ctx context.Context, cli *client.Client, ref string) error {
	if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w", ref, err)
	}
	return nil
}

// cleanupAll removes what earlier bench runs left behind (a run killed
// with SIGKILL cannot clean up): containers, networks and volumes carrying
// the run label or a bench compose project, the demo and pause images and
// the temp dirs. Runs still going are left alone: a run is live while the driver
// whose PID its temp dir records is alive (a temp dir without one counts
// as live for a day).
func cleanupAll(ctx context.Context) error {
	cli, err := newDockerClient()
	if err != nil {
		return err
	}
	defer cli.Close()
	var errs []error
	live := map[string]bool{}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "hostlet-bench-*"))
	for _, d := range dirs {
		id := runIDOfDir(d)
		if runAlive(d) {
			live[id] = true
			fmt.Fprintln(os.Stderr, "run", id, "is still going: left alone")
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintln(os.Stderr, "removed", d)
		}
	}

	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", runLabel))})
	if err != nil {
		errs = append(errs, err)
	}
	dead := map[string]bool{}
	for _, c := range list {
		if id := c.Labels[runLabel]; !live[id] {
			dead[id] = true
		}
	}
	for id := range dead {
		if err := removeByLabel(ctx, cli, runLabel+"="+id); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Fprintln(os.Stderr, "removed the containers of run", id)
		}
	}
	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "com.docker.compose.project"))})
	if err != nil {
		errs = append(errs, err)
	}
	for _, n := range nets {
		id, ok := strings.CutPrefix(n.Labels["com.docker.compose.project"], composeProjectPrefix)
		if !ok || live[id] {
			continue
		}
		if err := removeNetwork(ctx, cli, n.ID); err != nil {
			errs = append(errs, fmt.Errorf("network %s: %w", n.Name, err))
		} else {
			fmt.Fprintln(os.Stderr, "removed network", n.Name)
		}
	}
	for _, repo := range []string{imageRepo, pauseRepo} {
		imgs, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", repo))})
		if err != nil {
			errs = append(errs, err)
		}
		for _, im := range imgs {
			for _, tag := range im.RepoTags {
				id, ok := strings.CutPrefix(tag, repo+":")
				if !ok || live[id] {
					continue
				}
				if err := removeImage(ctx, cli, tag); err != nil {
					errs = append(errs, err)
				} else {
					fmt.Fprintln(os.Stderr, "removed image", tag)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// pidFile, in a run's temp dir, holds the driver's PID.
const pidFile = "driver.pid"

// runIDOfDir returns the run ID in a temp dir named
// hostlet-bench-<run ID>-<random>.
func runIDOfDir(dir string) string {
	name := strings.TrimPrefix(filepath.Base(dir), "hostlet-bench-")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		name = name[:i]
	}
	return name
}

func runAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		fi, serr := os.Stat(dir)
		return serr == nil && time.Since(fi.ModTime()) < 24*time.Hour
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}
