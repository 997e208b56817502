//go:build faults

package faults

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/imagetar"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// engine is a dockerd of the run's own: its data root, exec root (and so
// its containerd), socket, pid file and log live under dir. Its default
// network is a bridge of its own (made by the suite, in 198.18.0.0/15, the
// range set aside for benchmarks, and removed with the engine) and it
// writes no iptables rule, so it shares nothing with the machine's engine
// but the kernel. (`--bridge none` is not an option: a dockerd started
// with it deletes docker0, the machine engine's bridge.) Restarting it is the engine restart of
// a host: SIGTERM (the engine stops its containers), then dockerd started
// again as scripts/ensure-deps.sh starts it (nohup dockerd), with the
// flags that keep it apart.
type engine struct {
	dir    string
	bridge string
	sock   string
	log    string
	cmd    *exec.Cmd
	done   chan struct{}
	// hungStarts are the starts that hung (start), with the log's end.
	hungStarts []string
}

func newEngine(dir string) *engine {
	return &engine{dir: dir, bridge: fmt.Sprintf("hlfaults%d", os.Getpid()%100000), sock: filepath.Join(dir, "docker.sock"), log: filepath.Join(dir, "dockerd.log")}
}

// ensureBridge makes the engine's bridge when it is not there yet.
func (e *engine) ensureBridge() error {
	if _, err := net.InterfaceByName(e.bridge); err == nil {
		return nil
	}
	subnet := fmt.Sprintf("198.18.%d.1/24", os.Getpid()%250+1)
	for _, args := range [][]string{
		{"link", "add", "name", e.bridge, "type", "bridge"},
		{"addr", "add", subnet, "dev", e.bridge},
		{"link", "set", e.bridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// removeBridge deletes the engine's bridge.
func (e *engine) removeBridge() error {
	if _, err := net.InterfaceByName(e.bridge); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "link", "del", e.bridge).CombinedOutput(); err != nil {
		return fmt.Errorf("delete bridge %s: %w: %s", e.bridge, err, out)
	}
	return nil
}

// host is the DOCKER_HOST of the engine.
func (e *engine) host() string { return "unix://" + e.sock }

// start runs dockerd and waits until it answers a ping. A dockerd that
// hangs while it restores its containers (Debian's 20.10 did, once in
// many runs, with no call of hostlet's yet: hostlet starts after it) is
// killed and started once more; hungStarts counts these, and the run's
// summary shows them with the hung engine's last log lines.
func (e *engine) start(ctx context.Context) error {
	err := e.startOnce(ctx)
	if !errors.Is(err, errEngineHung) {
		return err
	}
	e.hungStarts = append(e.hungStarts, err.Error())
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.done
	if kerr := e.killLeftovers(); kerr != nil {
		return errors.Join(err, kerr)
	}
	if err2 := e.startOnce(ctx); err2 != nil {
		return fmt.Errorf("%w; started again after killing it: %w", err, err2)
	}
	return nil
}

// errEngineHung is a dockerd that runs but does not answer.
var errEngineHung = errors.New("dockerd not answering within 90s")

func (e *engine) startOnce(ctx context.Context) error {
	if e.running() {
		return nil
	}
	if err := e.ensureBridge(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(e.dir, "daemon.json"), []byte("{}\n"), 0o600); err != nil {
		return fmt.Errorf("write daemon.json: %w", err)
	}
	logFile, err := os.OpenFile(e.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open dockerd log: %w", err)
	}
	cmd := exec.Command("dockerd",
		"--config-file", filepath.Join(e.dir, "daemon.json"),
		"--data-root", filepath.Join(e.dir, "data"),
		"--exec-root", filepath.Join(e.dir, "exec"),
		"--pidfile", filepath.Join(e.dir, "dockerd.pid"),
		"--host", e.host(),
		"--bridge", e.bridge, "--iptables=false", "--ip-masq=false",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group (its containerd with it); a dying suite takes
	// it down.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("start dockerd: %w", err)
	}
	e.cmd, e.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(e.done)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		cli, err := e.client()
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, err = cli.Ping(pctx)
			cancel()
			_ = cli.Close()
			if err == nil {
				return nil
			}
		}
		if !e.running() {
			return fmt.Errorf("dockerd exited at start; its log ends:\n%s", tail(e.log, 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %w; its log ends:\n%s", errEngineHung, err, tail(e.log, 20))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *engine) running() bool {
	if e.done == nil {
		return false
	}
	select {
	case <-e.done:
		return false
	default:
		return true
	}
}

// stop sends dockerd SIGTERM (it stops every container, as at a host's
// shutdown) and waits for it; after timeout its whole process group gets
// SIGKILL.
func (e *engine) stop(timeout time.Duration) error {
	if !e.running() {
		return nil
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
	<-e.done
	return fmt.Errorf("dockerd did not stop within %s of SIGTERM; killed", timeout)
}

// restart is stop then start.
func (e *engine) restart(ctx context.Context) error {
	if err := e.stop(time.Minute); err != nil {
		return err
	}
	return e.start(ctx)
}

// client returns a client of the engine; the caller closes it.
func (e *engine) client() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.WithHost(e.host()), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for %s: %w", e.host(), err)
	}
	return cli, nil
}

// remove stops the engine after removing every container of instance, then
// unmounts whatever it left mounted under its folder and removes the
// folder.
func (e *engine) remove(instance string) error {
	var errs []error
	if e.running() {
		if cli, err := e.client(); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			errs = append(errs, removeInstance(ctx, cli, instance))
			cancel()
			_ = cli.Close()
		}
		errs = append(errs, e.stop(time.Minute))
	}
	errs = append(errs, e.killLeftovers(), e.removeBridge(), unmountUnder(e.dir), os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// killLeftovers SIGKILLs every process still naming the engine's folder
// on its command line: a containerd shim started while the engine shut
// down outlives it (see docs/reliability.md, "Fault suite"). The folder is
// the run's own, so these are the run's processes and nobody else's.
func (e *engine) killLeftovers() error {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("read /proc: %w", err)
	}
	var errs []error
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(e.dir+"/")) {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill leftover process %d (%s): %w", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}), err))
		}
	}
	return errors.Join(errs...)
}

// removeInstance force-removes every container labelled with instance.
func removeInstance(ctx context.Context, cli *client.Client, instance string) error {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+instance))})
	if err != nil {
		return fmt.Errorf("list containers of %s: %w", instance, err)
	}
	var errs []error
	for _, c := range list {
		if err := cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.ID[:12], err))
		}
	}
	return errors.Join(errs...)
}

// unmountUnder unmounts every mount point at or below dir, deepest first
// (what a killed engine leaves: overlay layers, netns, shm).
func unmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read mountinfo: %w", err)
	}
	var points []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		p := unescapeMount(f[4])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range points {
		if err := syscall.Unmount(p, 0); err != nil {
			if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// loadImage loads a FROM-scratch image tagged ref holding only the demo
// server (examples/demo, built by the caller into bin) as /demo, its
// entrypoint.
func loadImage(ctx context.Context, cli *client.Client, ref, bin string) error {
	f, err := imagetar.FromDisk(bin, "/demo", 0o755)
	if err != nil {
		return err
	}
	var archive bytes.Buffer
	if err := imagetar.Write(&archive, ref, []imagetar.File{f}, []string{"/demo"}, nil); err != nil {
		return err
	}
	if err := hruntime.LoadArchive(ctx, cli, &archive); err != nil {
		return fmt.Errorf("load image %s: %w", ref, err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return fmt.Errorf("image %s not there after load: %w", ref, err)
	}
	return nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	return tailOf(path, n, func(string) bool { return true })
}

// tailOf is the last n lines of the file at path that keep takes.
func tailOf(path string, n int, keep func(line string) bool) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := slices.DeleteFunc(strings.Split(strings.TrimRight(string(b), "\n"), "\n"), func(l string) bool { return !keep(l) })
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
