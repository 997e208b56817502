// Package cadvisor reads the figures of GET /stats from a cAdvisor daemon
// (the host config's stats.cadvisor), through its documented REST API
// v1.3 decoded into cAdvisor's own types (github.com/google/cadvisor/info/v1):
//
//	GET  <base>/api/v1.3/machine           cores, memory capacity
//	POST <base>/api/v1.3/containers/       the root cgroup: the host's working set
//	POST <base>/api/v1.3/docker/<id>       one Docker container
//
// (the POST bodies ask for the latest sample only: {"num_stats":1}).
//
// It does not use cAdvisor's Go client (github.com/google/cadvisor/client):
// that client takes no context and no http.Client (it sends through
// http.DefaultClient, which has no timeout), so a cAdvisor that accepts a
// connection and never answers would hang /stats and leak the request's
// goroutine; and its errors quote the whole URL and response body. This
// reader bounds every request by the caller's context and Timeout, reads
// at most maxBody bytes, keeps no idle connection (so no goroutine
// outlives a request), and names the cAdvisor by its URL with the
// userinfo hidden; userinfo in the URL is sent as basic auth (a cAdvisor
// behind an authenticating proxy).
package cadvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	info "github.com/google/cadvisor/info/v1"

	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/textcap"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// Timeout bounds one GET /stats request's calls to the cAdvisor, together.
const Timeout = 5 * time.Second

// maxBody is the largest answer read: one container's latest sample is
// about 5 KiB, the machine's description grows with its disks and NUMA
// nodes.
const maxBody = 4 << 20

// latest is the body of a container request that asks for the newest
// sample only (an info.ContainerInfoRequest; cAdvisor's default is 60).
const latest = `{"num_stats":1}`

// Reader reads machine and container figures from one cAdvisor.
type Reader struct {
	base     string // the URL without userinfo and trailing '/'
	display  string // the URL as errors name it, userinfo hidden
	raw      string // as configured, for scrubbing library errors
	user     string
	password string
	hasAuth  bool
	timeout  time.Duration // Timeout; shorter in tests
	client   *http.Client
	// cgroupPath, when set, gives a container's cgroup path: Stats then
	// asks cAdvisor for that cgroup instead of for a Docker container by
	// ID (see WithCgroupPaths).
	cgroupPath func(ctx context.Context, id string) (string, error)
}

// ByCgroup reports whether a cAdvisor finds engine e's containers only
// by their cgroup paths (WithCgroupPaths): its Docker endpoint knows
// neither Podman's containers nor those of a Docker keeping its images
// in containerd (Docker 29's default), whose storage it cannot read.
func ByCgroup(e hruntime.Engine) bool {
	return e.Podman() || e.ImageStore == "containerd"
}

// WithCgroupPaths makes Stats look a container up by its cgroup path,
// which path gives (hruntime.Docker.CgroupPath), instead of by its
// Docker ID: cAdvisor's Docker endpoint knows only the containers of a
// Docker engine, and a Podman engine's containers are found by their
// cgroup. It returns r.
func (r *Reader) WithCgroupPaths(path func(ctx context.Context, id string) (string, error)) *Reader {
	r.cgroupPath = path
	return r
}

// New returns a Reader of the cAdvisor at rawURL (an http(s) URL that
// internal/config has checked; a path prefix is kept, for a cAdvisor run
// with --url_base_prefix or behind a proxy).
func New(rawURL string) *Reader {
	r := &Reader{raw: rawURL, display: redact.URL(rawURL), timeout: Timeout}
	r.base, r.user, r.password, r.hasAuth = redact.Split(rawURL)
	r.base = strings.TrimRight(r.base, "/")
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	// The status line and headers of an answer are bounded like its body.
	tr.MaxResponseHeaderBytes = maxHeader
	r.client = &http.Client{Transport: tr}
	return r
}

// Machine reads the host's cores and memory capacity, and its available
// memory: the capacity less the root cgroup's working set (what the
// kubelet calls memory.available).
func (r *Reader) Machine(ctx context.Context) (hruntime.Machine, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var mi info.MachineInfo
	if err := r.call(ctx, "machine", "", &mi); err != nil {
		return hruntime.Machine{}, err
	}
	var root info.ContainerInfo
	if err := r.call(ctx, "containers/", latest, &root); err != nil {
		return hruntime.Machine{}, err
	}
	s := newest(root)
	if s == nil || s.Memory == nil {
		return hruntime.Machine{}, r.errorf("the root cgroup has no memory sample yet")
	}
	m := hruntime.Machine{Time: s.Timestamp.UTC(), Cores: mi.NumCores, MemoryBytes: mi.MemoryCapacity}
	if s.Memory.WorkingSet < mi.MemoryCapacity {
		m.MemoryAvailableBytes = mi.MemoryCapacity - s.Memory.WorkingSet
	}
	return m, nil
}

// Stats reads one Docker container's latest sample, in the engine's
// terms: memory usage and working set as cAdvisor reports them, the limit
// capped at the machine's memory (an unlimited container reports the
// host's memory, as the engine does), CPU seconds since the container
// started, and the pids cgroup's task count, which cAdvisor reports only
// with its process metrics on (off by default: --disable_metrics holds
// "process"), else 0.
func (r *Reader) Stats(ctx context.Context, id string) (hruntime.Stats, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c, err := r.container(ctx, id)
	if err != nil {
		return hruntime.Stats{}, err
	}
	s := newest(c)
	if s == nil || s.Cpu == nil || s.Memory == nil {
		return hruntime.Stats{}, r.errorf("docker container %s: no sample yet", id)
	}
	var mi info.MachineInfo
	if err := r.call(ctx, "machine", "", &mi); err != nil {
		return hruntime.Stats{}, err
	}
	out := hruntime.Stats{
		Time:                  s.Timestamp.UTC(),
		MemoryUsageBytes:      s.Memory.Usage,
		MemoryWorkingSetBytes: s.Memory.WorkingSet,
		MemoryLimitBytes:      c.Spec.Memory.Limit,
		CPUUsageSeconds:       float64(s.Cpu.Usage.Total) / 1e9,
	}
	if out.MemoryLimitBytes == 0 || out.MemoryLimitBytes > mi.MemoryCapacity {
		out.MemoryLimitBytes = mi.MemoryCapacity
	}
	if s.Processes != nil {
		out.Pids = s.Processes.ThreadsCurrent
	}
	return out, nil
}

// container reads container id's latest sample: by its cgroup path
// (WithCgroupPaths), else from the Docker endpoint.
func (r *Reader) container(ctx context.Context, id string) (info.ContainerInfo, error) {
	var c info.ContainerInfo
	if r.cgroupPath != nil {
		p, err := r.cgroupPath(ctx, id)
		if err != nil {
			return c, r.errorf("container %s: %v", id, err)
		}
		err = r.call(ctx, "containers"+escapePath(p), latest, &c)
		return c, err
	}
	var byName map[string]info.ContainerInfo
	if err := r.call(ctx, "docker/"+url.PathEscape(id), latest, &byName); err != nil {
		return c, err
	}
	if len(byName) != 1 {
		return c, r.errorf("docker container %s: %d containers in the answer, want 1", id, len(byName))
	}
	for _, one := range byName {
		c = one
	}
	return c, nil
}

// escapePath escapes each element of cgroup path p for a URL path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, e := range parts {
		parts[i] = url.PathEscape(e)
	}
	return strings.Join(parts, "/")
}

// newest is the latest sample of c, nil when it has none.
func newest(c info.ContainerInfo) *info.ContainerStats {
	var out *info.ContainerStats
	for _, s := range c.Stats {
		if s != nil && (out == nil || s.Timestamp.After(out.Timestamp)) {
			out = s
		}
	}
	return out
}

// call sends one request of API v1.3 (a GET, or a POST of query when it
// is not empty) and decodes the JSON answer into out.
func (r *Reader) call(ctx context.Context, endpoint, query string, out any) error {
	method, body := http.MethodGet, io.Reader(nil)
	if query != "" {
		method, body = http.MethodPost, strings.NewReader(query)
	}
	path := "/api/v1.3/" + endpoint
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, body)
	if err != nil {
		return r.errorf("%s %s: %v", method, path, err)
	}
	if query != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.hasAuth {
		req.SetBasicAuth(r.user, r.password)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		if isTimeout(err) || errors.Is(err, context.DeadlineExceeded) {
			return r.errorf("%s %s: no answer within %s", method, path, r.timeout)
		}
		return r.errorf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return r.errorf("%s %s: reading the answer: %v", method, path, err)
	}
	if len(data) > maxBody {
		return r.errorf("%s %s: answer larger than %d bytes", method, path, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		// cAdvisor answers a failure with its error's text; whatever
		// answers may echo the password, which is quoted only where
		// errorf can hide it.
		if r.password != "" && !redact.Hides(r.password) {
			return r.errorf("%s %s: %s (answer not shown: the password is too short to hide in it)", method, path, resp.Status)
		}
		return r.errorf("%s %s: %s: %s", method, path, resp.Status, firstLine(data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return r.errorf("%s %s: decoding the answer: %v", method, path, err)
	}
	return nil
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// firstLine is the first line of a text answer, at most 200 bytes (cut at
// a character boundary).
func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return textcap.Truncate(s, 200)
}

// maxHeader bounds an answer's status line and headers.
const maxHeader = 64 << 10

// errorf is an error naming the cAdvisor, its credentials hidden, its text
// at most textcap.DetailBytes (whatever answers on the configured address
// chooses what the status line, the error or the body says).
func (r *Reader) errorf(format string, args ...any) error {
	err := redact.Error(fmt.Errorf("cadvisor %s: "+format, append([]any{r.display}, args...)...), r.raw)
	return errors.New(textcap.Truncate(err.Error(), textcap.DetailBytes))
}
