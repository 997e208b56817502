package runtime

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
)

// healthRunTick is how often the healthcheck runner looks for running
// containers and runs the healthchecks that are due; at most
// healthRunConcurrency run at once, each waited on for its timeout, at
// most maxHealthRunWait (a manifest's timeout may be years).
const (
	healthRunTick        = time.Second
	healthRunConcurrency = 8
	maxHealthRunWait     = 2 * time.Minute
)

// healthRunner runs the healthchecks of this instance's containers on
// an engine that runs none itself (Podman without systemd: its
// healthcheck timers are systemd timers): each on its interval, through
// Podman's own API (the endpoint behind `podman healthcheck run`), which
// records the result in the container's health as a timer would.
type healthRunner struct {
	d *Docker
	// checks holds, per running container seen, its healthcheck's
	// timings (zero interval: none) and when it is next due.
	checks map[string]*healthTimer
	// endpoint is the engine's base URL for plain HTTP requests on the
	// client's transport.
	endpoint string
	// slots bounds the runs under way; running counts them for Close.
	slots   chan struct{}
	running gosync.WaitGroup
}

type healthTimer struct {
	interval, timeout time.Duration
	next              time.Time
	// busy: a run of this container's healthcheck is under way (a slow
	// one is never run twice at once, and holds up no other).
	busy atomic.Bool
}

// runHealthchecks runs the healthchecks until ctx ends (see healthRunner).
func (d *Docker) runHealthchecks(ctx context.Context) {
	endpoint, err := plainEndpoint(d.cli.DaemonHost())
	if err != nil {
		d.log.Warn("healthchecks not run by hostlet", "error", err)
		return
	}
	r := &healthRunner{d: d, checks: map[string]*healthTimer{}, endpoint: endpoint, slots: make(chan struct{}, healthRunConcurrency)}
	defer r.running.Wait()
	t := d.clock.NewTicker(healthRunTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		r.tick(ctx)
	}
}

// tick runs every healthcheck that is due, of the running containers.
func (r *healthRunner) tick(ctx context.Context) {
	f := r.d.ownFilter()
	f.Add("status", "running")
	list, err := r.d.cli.ContainerList(ctx, container.ListOptions{Filters: f})
	if err != nil {
		return
	}
	now := r.d.clock.Now()
	seen := make(map[string]bool, len(list))
	for _, c := range list {
		seen[c.ID] = true
		h := r.checks[c.ID]
		if h == nil {
			if h, err = r.timer(ctx, c.ID, now); err != nil {
				continue
			}
			r.checks[c.ID] = h
		}
		if h.interval == 0 || now.Before(h.next) || h.busy.Load() {
			continue
		}
		select {
		case r.slots <- struct{}{}:
		default:
			continue // all slots busy: due again at the next tick
		}
		h.next = now.Add(h.interval)
		h.busy.Store(true)
		r.running.Add(1)
		go func(id string) {
			defer func() { <-r.slots; h.busy.Store(false); r.running.Done() }()
			r.run(ctx, id, h.timeout)
		}(c.ID)
	}
	for id := range r.checks {
		if !seen[id] {
			delete(r.checks, id)
		}
	}
}

// timer reads a container's healthcheck timings: the first run is due
// one interval after now, as an engine's timer would be.
func (r *healthRunner) timer(ctx context.Context, id string, now time.Time) (*healthTimer, error) {
	insp, err := r.d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("inspect container %s: %w", id, translate(err))
	}
	h := &healthTimer{}
	if insp.Config == nil || insp.Config.Healthcheck == nil || len(insp.Config.Healthcheck.Test) == 0 || insp.Config.Healthcheck.Test[0] == "NONE" {
		return h, nil
	}
	hc := insp.Config.Healthcheck
	h.interval, h.timeout = orDefault(hc.Interval, 30*time.Second), orDefault(hc.Timeout, 30*time.Second)
	h.next = now.Add(h.interval)
	return h, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// run asks the engine to run container id's healthcheck once and record
// the result. A failure is logged at debug level: the next interval
// tries again, and the container's health says what the engine knows.
func (r *healthRunner) run(ctx context.Context, id string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, maxHealthRunWait)+10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.endpoint+"/v4.0.0/libpod/containers/"+url.PathEscape(id)+"/healthcheck", nil)
	if err != nil {
		return
	}
	resp, err := r.d.cli.HTTPClient().Do(req)
	if err != nil {
		r.d.log.Debug("run healthcheck", "container", id, "error", err)
		return
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		r.d.log.Debug("run healthcheck", "container", id, "status", resp.Status)
	}
}

// plainEndpoint is the base URL of the engine at host for requests sent
// on the Docker client's own transport (which dials a unix socket
// whatever the URL's host).
func plainEndpoint(host string) (string, error) {
	switch {
	case strings.HasPrefix(host, "unix://"):
		return "http://engine", nil
	case strings.HasPrefix(host, "tcp://"), strings.HasPrefix(host, "http://"):
		return "http://" + strings.TrimPrefix(strings.TrimPrefix(host, "tcp://"), "http://"), nil
	}
	return "", fmt.Errorf("engine at %s: only a unix socket or plain tcp is supported for running healthchecks", host)
}
