package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// Bounds of lifecycle hooks: a postStart hook runs at most
// MaxPostStartTime; the stop after a preStop hook is given at least
// minStopGrace, as the kubelet gives it 2 s past the hook.
const (
	MaxPostStartTime = 2 * time.Minute
	minStopGrace     = 2 * time.Second
)

// preStop runs container c's preStop hook (its podspec.LabelPreStop), if
// it has one and runs, against the pod's address ip, within grace (a
// negative grace, DefaultStopTimeout: the one recorded with the hook); it
// returns the grace left for the stop. A hook that fails is logged: the
// stop goes on, as in Kubernetes.
func preStop(ctx context.Context, ex Execer, c *hruntime.Container, ip string, grace time.Duration, log logger) time.Duration {
	if c == nil || !c.Running() || c.Labels[podspec.LabelPreStop] == "" {
		return grace
	}
	var ps podspec.PreStop
	if err := json.Unmarshal([]byte(c.Labels[podspec.LabelPreStop]), &ps); err != nil {
		log.Warn("preStop hook not run: its label does not decode", "pod", c.Pod(), "container", c.Slot(), "error", err)
		return grace
	}
	if grace < 0 {
		grace = manifest.Seconds(ps.GraceSeconds)
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	if err := runHook(hctx, ex, c.ID, ip, ps.Hook); err != nil {
		log.Warn("preStop hook failed; stopping the container", "pod", c.Pod(), "container", c.Slot(), "error", err)
	}
	return max(grace-time.Since(start), minStopGrace)
}

// logger is what the hooks log with.
type logger interface {
	Warn(msg string, args ...any)
}

// runHook runs hook h for container id at the pod's address ip.
func runHook(ctx context.Context, ex Execer, id, ip string, h manifest.Hook) error {
	switch {
	case h.Exec != nil && len(h.Exec.Command) > 0:
		if ex == nil {
			return errors.New("this engine runs no commands in containers")
		}
		code, err := ex.Exec(ctx, id, h.Exec.Command)
		if err != nil {
			return fmt.Errorf("exec %s: %w", h.Exec.Command[0], err)
		}
		if code != 0 {
			return fmt.Errorf("exec %s exited with %d", h.Exec.Command[0], code)
		}
		return nil
	case h.SleepSeconds > 0:
		t := time.NewTimer(manifest.Seconds(h.SleepSeconds))
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("sleep %d s: %w", h.SleepSeconds, ctx.Err())
		}
	case h.HTTPGet != nil:
		addr, err := probeAddr(probeTarget{ip: ip}, h.HTTPGet.Host, h.HTTPGet.Port)
		if err != nil {
			return err
		}
		return httpGet(ctx, addr, *h.HTTPGet)
	}
	return errors.New("no action (exec or httpGet)")
}

// httpGet GETs g's path, with its headers, on the pod's address addr: a
// 2xx or 3xx answer succeeds. It reaches nothing but addr (podClient),
// whatever a Host header says.
func httpGet(ctx context.Context, addr string, g manifest.HTTPGet) error {
	url := "http://" + addr + g.Path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	for _, h := range g.HTTPHeaders {
		if http.CanonicalHeaderKey(h.Name) == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	client := podClient(addr)
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("http GET %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("http GET %s: status %d", url, resp.StatusCode)
	}
	return nil
}

// infraIP is the address of pod's running infra container in plan's
// listing ("" when it has none): its app containers' address.
func infraIP(plan Plan, pod string) string {
	for _, pp := range plan.Pods {
		if pp.ID != pod {
			continue
		}
		for _, c := range pp.Current {
			if c.Slot() == hruntime.InfraName && c.Running() {
				return c.IP
			}
		}
	}
	return ""
}
