package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// hostletConfig is what differs between the hostlet processes of a run.
type hostletConfig struct {
	instance     string
	stateDir     string
	gitURL       string
	gitInterval  time.Duration
	syncInterval time.Duration
	// dockerHost is "" for the local socket, or the counting proxy.
	dockerHost string
	infraImage string
	tokenFile  string
	// concurrency is sync.concurrency (0: 4, hostlet's default).
	concurrency int
}

func (c hostletConfig) yaml(listen string) string {
	return fmt.Sprintf(`hostname: bench
stateDir: %q
listen: %q
tokenFile: %q
instance: %q
docker:
  host: %q
  infraImage: %q
sync:
  interval: %s
  concurrency: %d
  prune: true
  allowEmpty: true
sources:
  - name: bench
    type: git
    url: %q
    ref: main
    path: pods
    interval: %s
log:
  level: info
  format: text
`, c.stateDir, listen, c.tokenFile, c.instance, c.dockerHost, c.infraImage, c.syncInterval, cmp.Or(c.concurrency, 4), c.gitURL, c.gitInterval)
}

// hostlet is a running `hostlet run` subprocess and its HTTP API.
type hostlet struct {
	*proc
	cfg   hostletConfig
	api   string
	token string
	// pprof is the address of its pprof server, "" when not asked for.
	pprof string
}

var apiClient = &http.Client{Timeout: 10 * time.Second}

// startHostlet writes the config into dir and runs bin with it. pprof, when
// not "", is passed as HOSTLET_PPROF.
func startHostlet(bin, dir, name string, cfg hostletConfig, token, pprof string) (*hostlet, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	listen := "127.0.0.1:" + strconv.Itoa(ports[0])
	cfgPath := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.yaml(listen)), 0o600); err != nil {
		return nil, err
	}
	var env []string
	for _, kv := range os.Environ() {
		// No HOSTLET_* override of the config may leak in from the caller.
		if !strings.HasPrefix(kv, "HOSTLET_") {
			env = append(env, kv)
		}
	}
	if pprof != "" {
		env = append(env, "HOSTLET_PPROF="+pprof)
	}
	p, err := startProc(name, dir, filepath.Join(dir, name+".log"), env, bin, "run", "--config", cfgPath)
	if err != nil {
		return nil, err
	}
	return &hostlet{proc: p, cfg: cfg, api: "http://" + listen, token: token, pprof: pprof}, nil
}

// status is the part of GET /status the driver reads.
type status struct {
	LastSync struct {
		Start time.Time `json:"start"`
		Error string    `json:"error"`
	} `json:"lastSync"`
	Sources []struct {
		Name     string `json:"name"`
		Revision string `json:"revision"`
		Error    string `json:"error"`
	} `json:"sources"`
}

func (h *hostlet) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.api+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return b, nil
}

func (h *hostlet) status(ctx context.Context) (status, error) {
	var st status
	b, err := h.get(ctx, "/status")
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}

// syncs reads hostlet_syncs_total from GET /metrics.
func (h *hostlet) syncs(ctx context.Context) (int, error) {
	b, err := h.get(ctx, "/metrics")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "hostlet_syncs_total "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, fmt.Errorf("no hostlet_syncs_total in /metrics")
}

// syncNow is the webhook: POST /sync with the bearer token.
func (h *hostlet) syncNow(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.api+"/sync", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := apiClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST /sync: %s", resp.Status)
	}
	return nil
}

// waitFor polls cond every 50 ms until it holds.
func (h *hostlet) waitFor(ctx context.Context, what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		if h.exited() {
			return fmt.Errorf("hostlet exited (%v) while waiting for %s; its log ends:\n%s", h.err, what, h.tail(30))
		}
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v); hostlet's log ends:\n%s", what, ctx.Err(), lastErr, h.tail(30))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitRevision waits until the git source reports rev and a sync finished
// after that.
func (h *hostlet) waitRevision(ctx context.Context, rev string, timeout time.Duration) error {
	return h.waitFor(ctx, "git source at "+rev[:12], timeout, func(ctx context.Context) (bool, error) {
		st, err := h.status(ctx)
		if err != nil {
			return false, err
		}
		for _, s := range st.Sources {
			if s.Revision == rev {
				n, err := h.syncs(ctx)
				return n >= 1, err
			}
		}
		return false, nil
	})
}

// waitSyncs waits until hostlet_syncs_total reaches n.
func (h *hostlet) waitSyncs(ctx context.Context, n int, timeout time.Duration) (int, error) {
	var got int
	err := h.waitFor(ctx, fmt.Sprintf("%d syncs", n), timeout, func(ctx context.Context) (bool, error) {
		var err error
		got, err = h.syncs(ctx)
		return got >= n, err
	})
	return got, err
}

func (h *hostlet) usage() (usage, error) { return readUsage(h.pid()) }

// stopHostlet samples /proc, then stops hostlet (SIGTERM; containers keep
// running).
func (h *hostlet) stopHostlet() (usage, error) {
	u, err := h.usage()
	h.stop(15 * time.Second)
	return u, err
}

// profile fetches a pprof profile from the hostlet's HOSTLET_PPROF server
// into path (seconds > 0: a CPU profile over that long).
func (h *hostlet) profile(ctx context.Context, kind string, seconds int, path string) error {
	if h.pprof == "" {
		return nil
	}
	url := "http://" + h.pprof + "/debug/pprof/" + kind
	if seconds > 0 {
		url += "?seconds=" + strconv.Itoa(seconds)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Timeout: time.Duration(seconds+30) * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
