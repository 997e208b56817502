//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// hostletConfig renders the host config of the run.
type hostletConfig struct {
	instance, stateDir, listen, tokenFile, dockerHost  string
	gitURL, httpURL, etcdEndpoint, etcdPrefix, etcdKey string
	fileDir                                            string
}

func (c hostletConfig) yaml() string {
	return fmt.Sprintf(`hostname: faults
instance: %q
stateDir: %q
listen: %q
tokenFile: %q
docker:
  host: %q
sync:
  interval: 2s
  concurrency: 4
  prune: true
etcd:
  endpoints: [%q]
  prefix: %q
sources:
  - {name: %s, type: git, url: %q, ref: main, path: pods, interval: 2s, timeout: 5s}
  - {name: %s, type: http, url: %q, interval: 2s, timeout: 5s}
  - {name: %s, type: etcd, key: %q, timeout: 5s}
  - {name: %s, type: file, path: %q, interval: 2s}
  - {name: %s, type: push}
log:
  level: info
  format: text
`, c.instance, c.stateDir, c.listen, c.tokenFile, c.dockerHost, c.etcdEndpoint, c.etcdPrefix,
		srcGit, c.gitURL, srcHTTP, c.httpURL, srcEtcd, c.etcdKey, srcFile, c.fileDir, srcPush)
}

// hostlet is one `hostlet run` process. It runs as root without
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (setpriv), so a state file made
// unreadable (mode 000) is unreadable to it, as it would be to a hostlet
// that is not root.
type hostlet struct {
	bin, config, log string
	api, token       string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
	// starts counts the processes started.
	starts int
}

// start runs a new hostlet process (the previous one must have ended).
func (h *hostlet) start() error {
	if h.alive() {
		return fmt.Errorf("hostlet already running (pid %d)", h.cmd.Process.Pid)
	}
	logFile, err := os.OpenFile(h.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open hostlet log: %w", err)
	}
	h.starts++
	fmt.Fprintf(logFile, "---- faults: hostlet start #%d at %s\n", h.starts, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command("setpriv",
		"--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search",
		"--", h.bin, "run", "--config", h.config)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOSTLET_") && !strings.HasPrefix(kv, "DOCKER_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("start hostlet: %w", err)
	}
	h.cmd, h.done, h.err = cmd, make(chan struct{}), nil
	go func() {
		err := cmd.Wait()
		_ = logFile.Close()
		h.err = err
		close(h.done)
	}()
	return nil
}

func (h *hostlet) alive() bool {
	if h.done == nil {
		return false
	}
	select {
	case <-h.done:
		return false
	default:
		return true
	}
}

// exitErr is how the last process ended ("" while it runs).
func (h *hostlet) exitErr() string {
	if h.alive() || h.done == nil {
		return ""
	}
	if h.err == nil {
		return "exited 0"
	}
	return h.err.Error()
}

// kill9 sends SIGKILL and waits for the process to be gone.
func (h *hostlet) kill9() {
	if !h.alive() {
		return
	}
	_ = syscall.Kill(h.cmd.Process.Pid, syscall.SIGKILL)
	<-h.done
}

// stop sends SIGTERM and waits; SIGKILL after 20 s.
func (h *hostlet) stop() {
	if !h.alive() {
		return
	}
	_ = syscall.Kill(h.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(20 * time.Second):
		h.kill9()
	}
}

// statusDoc is the part of GET /status the suite reads.
type statusDoc struct {
	LastSync struct {
		Start time.Time `json:"start"`
		Error string    `json:"error"`
	} `json:"lastSync"`
	Sources []struct {
		Name  string `json:"name"`
		Error string `json:"error"`
	} `json:"sources"`
}

var apiClient = &http.Client{Timeout: 3 * time.Second}

func (h *hostlet) status(ctx context.Context) (statusDoc, error) {
	var d statusDoc
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.api+"/status", nil)
	if err != nil {
		return d, err
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return d, fmt.Errorf("GET /status: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return d, fmt.Errorf("GET /status: read: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return d, fmt.Errorf("GET /status: %s", resp.Status)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("GET /status: %w", err)
	}
	return d, nil
}

// recreatedAnew returns hostlet's create events since since (best effort:
// none when the API does not answer); createdAnew picks the ones that
// created a container anew.
func (h *hostlet) recreatedAnew(ctx context.Context, since time.Time) []hostletEvent {
	out := []hostletEvent{}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.api+"/events", nil)
	if err != nil {
		return out
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	var evs []hostletEvent
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&evs) != nil {
		return out
	}
	for _, ev := range evs {
		if ev.Type == "create" && !ev.Time.Before(since.Add(-time.Second)) {
			out = append(out, ev)
		}
	}
	return out
}

// syncNow asks hostlet to read every source and sync now (the webhook);
// best effort: hostlet may be down.
func (h *hostlet) syncNow() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.api+"/sync", strings.NewReader("{}"))
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := apiClient.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

// waitAPI waits until the API answers /status, or the process ends.
func (h *hostlet) waitAPI(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if !h.alive() {
			return fmt.Errorf("hostlet ended (%s); its log ends:\n%s", h.exitErr(), tail(h.log, 15))
		}
		if _, err := h.status(ctx); err == nil {
			return nil
		} else if time.Now().After(deadline) {
			return fmt.Errorf("hostlet API not answering within %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
