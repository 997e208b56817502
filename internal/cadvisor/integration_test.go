package cadvisor_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	info "github.com/google/cadvisor/info/v1"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/cadvisor"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
)

func TestMain(m *testing.M) { dockertest.Main(m, removeDaemon) }

// daemon is the cAdvisor daemon (internal/tools/cadvisord) built once per
// test binary, removed by TestMain.
var daemon struct {
	once   sync.Once
	dir    string
	binary string
	err    error
}

func removeDaemon() error {
	if daemon.dir == "" {
		return nil
	}
	return os.RemoveAll(daemon.dir)
}

// buildDaemon builds internal/tools/cadvisord (cAdvisor's manager from
// its modules behind the daemon's REST API) into a temp dir, once. Its
// modules are in go.mod like every other dependency of the tests: a build
// that fails, for whatever reason, fails the test (never a skip).
func buildDaemon(t *testing.T) string {
	t.Helper()
	daemon.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			daemon.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		if daemon.dir, daemon.err = os.MkdirTemp("", "cadvisord-"); daemon.err != nil {
			return
		}
		daemon.binary = filepath.Join(daemon.dir, "cadvisord")
		cmd := exec.Command("go", "build", "-trimpath", "-o", daemon.binary, "./internal/tools/cadvisord")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			daemon.err = fmt.Errorf("go build ./internal/tools/cadvisord: %w\n%s", err, out)
		}
	})
	if daemon.err != nil {
		t.Fatal(daemon.err)
	}
	return daemon.binary
}

// startDaemon runs the cAdvisor on a free port of 127.0.0.1 until stop or
// the end of the test, and returns its base URL once it serves.
func startDaemon(t *testing.T) (url string, stop func()) {
	t.Helper()
	cmd := exec.Command(buildDaemon(t), "-listen_ip", "127.0.0.1", "-port", "0")
	// A test binary that is killed (or panics on -timeout) takes the
	// cAdvisor with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start cadvisord: %v", err)
	}
	exited := make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "cadvisord: listening on "); ok {
				addr <- a
			}
		}
		exited <- cmd.Wait()
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
			}
		})
	}
	t.Cleanup(stop)
	select {
	case url = <-addr:
	case err := <-exited:
		exited <- err
		t.Fatalf("cadvisord exited before serving: %v\n%s", err, stderr.tail())
	case <-time.After(time.Minute):
		t.Fatalf("cadvisord not serving within a minute\n%s", stderr.tail())
	}
	t.Logf("cAdvisor at %s", url)
	return url, stop
}

// TestStatsFromCAdvisor: with stats.cadvisor, hostlet's /stats and
// /stats/{pod}/{container} serve the figures of a real cAdvisor on
// loopback: the container's sample is one cAdvisor holds (its timestamp
// and memory limit), the machine's cores and memory are cAdvisor's; once
// the cAdvisor stops, both are a prompt 502 naming it.
func TestStatsFromCAdvisor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a cAdvisor and a container")
	}
	base, stopDaemon := startDaemon(t)

	image := dockertest.TestImage(t)
	dir := t.TempDir()
	const limit = 128 << 20
	pod := dockertest.PausePod("mem", image, fmt.Sprintf("memory: %d", limit))
	if err := os.WriteFile(filepath.Join(dir, "mem.yaml"), []byte(pod), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "hostlet.yaml")
	yaml := fmt.Sprintf(`hostname: test-host
instance: %s
stateDir: %s
listen: 127.0.0.1:%d
docker:
  infraImage: %s
sync:
  interval: 1s
stats:
  cadvisor: %s
sources:
  - {name: local, type: file, path: %s}
`, dockertest.Instance(t), filepath.Join(t.TempDir(), "state"), testkit.FreePort(t), image, base, dir)
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	a := agenttest.Start(t, cfg, nil)
	doc := a.WaitStatus(t, time.Minute, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == "mem" {
				return p.Phase == "Running", "mem is " + string(p.Phase)
			}
		}
		return false, "no pod mem"
	})
	id := doc.Pods[0].Containers[0].ContainerID

	// cAdvisor sees a new container when its cgroup appears: until then
	// hostlet answers 502 with cAdvisor's "unable to find". Its first
	// sample of a cgroup found by path may be taken before the process
	// used anything: the figures are checked on a sample that has some.
	var st api.ContainerStatsDoc
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		code, body, err := testkit.HTTP(http.MethodGet, a.URL("/stats/mem/app"), "")
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("GET /stats/mem/app: %d %s %v", code, body, err)
		}
		return json.Unmarshal([]byte(body), &st) == nil && st.MemoryUsageBytes > 0 && st.CPUUsageSeconds > 0, body
	})
	t.Logf("from cAdvisor: %+v", st)
	if st.ContainerID != id || st.MemoryLimitBytes != limit || st.MemoryWorkingSetBytes == 0 || st.MemoryUsageBytes < st.MemoryWorkingSetBytes || st.CPUUsageSeconds <= 0 {
		t.Errorf("stats %+v (container %s, limit %d)", st, id, limit)
	}
	if !holdsSample(cadvisorContainer(t, base, id), st.Time) {
		t.Errorf("hostlet's sample time %s is none of cAdvisor's samples of %s", st.Time, id)
	}

	var ms api.MachineStats
	if err := json.Unmarshal([]byte(get(t, a.URL("/stats"), http.StatusOK)), &ms); err != nil {
		t.Fatal(err)
	}
	var mi info.MachineInfo
	cadvisorGet(t, base+"/api/v1.3/machine", "", &mi)
	var root info.ContainerInfo
	cadvisorGet(t, base+"/api/v1.3/containers/", `{"num_stats":60}`, &root)
	t.Logf("machine from cAdvisor: %+v", ms)
	if ms.Cores != mi.NumCores || ms.MemoryBytes != mi.MemoryCapacity || ms.MemoryAvailableBytes == 0 || ms.MemoryAvailableBytes >= ms.MemoryBytes || ms.Pods != 1 || ms.Containers != 1 {
		t.Errorf("machine %+v; cAdvisor: %d cores, %d bytes", ms, mi.NumCores, mi.MemoryCapacity)
	}
	if !holdsSample(root, ms.Time) {
		t.Errorf("hostlet's machine time %s is none of cAdvisor's samples of /", ms.Time)
	}

	stopDaemon()
	for _, path := range []string{"/stats", "/stats/mem/app"} {
		start := time.Now()
		body := get(t, a.URL(path), http.StatusBadGateway)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("GET %s with the cAdvisor down took %s", path, took)
		}
		if !strings.Contains(body, "cadvisor "+base) || !strings.Contains(body, "connection refused") {
			t.Errorf("GET %s with the cAdvisor down: %s", path, body)
		}
	}
}

func holdsSample(c info.ContainerInfo, at time.Time) bool {
	for _, s := range c.Stats {
		if s != nil && s.Timestamp.Equal(at) {
			return true
		}
	}
	return false
}

// cadvisorGet asks the cAdvisor directly (a POST of query when it is set).
// cadvisorContainer reads cAdvisor's last minute of samples of
// container id: by its cgroup path where cAdvisor's Docker endpoint does
// not know it (cadvisor.ByCgroup), else from the Docker endpoint, whose
// answer is keyed by the container's cgroup path (/docker/<id> with
// cgroupfs, /system.slice/docker-<id>.scope with systemd, under the
// engine's cgroup parent): the one entry there, whose path must name it.
func cadvisorContainer(t *testing.T, base, id string) info.ContainerInfo {
	t.Helper()
	if d := dockertest.Docker(t); cadvisor.ByCgroup(d.Engine()) {
		p, err := d.CgroupPath(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		var c info.ContainerInfo
		cadvisorGet(t, base+"/api/v1.3/containers"+p, `{"num_stats":60}`, &c)
		return c
	}
	var byName map[string]info.ContainerInfo
	cadvisorGet(t, base+"/api/v1.3/docker/"+id, `{"num_stats":60}`, &byName)
	if len(byName) != 1 {
		t.Fatalf("cAdvisor's answer for %s holds %d containers, want 1", id, len(byName))
	}
	for path, c := range byName {
		if !strings.Contains(path, id) {
			t.Errorf("cAdvisor's container %s is at cgroup path %s, which does not name it", id, path)
		}
		return c
	}
	return info.ContainerInfo{}
}

func cadvisorGet(t *testing.T, url, query string, out any) {
	t.Helper()
	var resp *http.Response
	var err error
	if query == "" {
		resp, err = http.Get(url)
	} else {
		resp, err = http.Post(url, "application/json", strings.NewReader(query))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	code, body, err := testkit.HTTP(http.MethodGet, url, "")
	if err != nil || code != want {
		t.Fatalf("GET %s: %d %s %v, want %d", url, code, body, err, want)
	}
	return body
}

// lockedBuffer is the daemon's stderr, written by exec's copier and read
// by the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// tail is the last 4 KiB written.
func (b *lockedBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4096 {
		s = "..." + s[len(s)-4096:]
	}
	return s
}
