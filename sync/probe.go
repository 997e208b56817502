package sync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// unhealthyFunc restarts a container whose probe failed.
type unhealthyFunc func(ctx context.Context, pod, slot, id, ip, why string, grace time.Duration)

// Execer runs a command in a container (exec liveness probes).
type Execer interface {
	Exec(ctx context.Context, id string, cmd []string) (int, error)
}

// prober runs one goroutine per probed container, keyed by container ID
// and probe settings; update starts and stops them to match the pods.
//
// Every worker runs under the context of the sync that started it (Run's
// context, or the one given to SyncOnce) and is tracked until its goroutine
// returns: update cancels the workers it no longer wants without waiting
// (one may be waiting for the sync lock the caller holds), and stopAll
// cancels every worker and joins them all, those update cancelled
// included. A worker whose context ended is started again by the next
// update that wants it.
type prober struct {
	rt          Execer
	log         *slog.Logger
	onUnhealthy unhealthyFunc
	// onReady, when set, is told that a readiness probe changed its
	// verdict (a rollout may complete).
	onReady func()
	clock   clock.Clock

	mu      gosync.Mutex
	workers map[string]*probeWorker // by container ID; readiness probes by ID + readySuffix
	// running counts every worker goroutine not yet returned.
	running gosync.WaitGroup
}

type probeWorker struct {
	key    string // probe settings and target; a change restarts the worker
	cancel context.CancelFunc
	done   chan struct{}
	// passed is closed once a startup probe passes (nil for others);
	// the container's liveness and readiness workers wait for it.
	passed chan struct{}

	mu      gosync.Mutex
	healthy bool
}

func newProber(rt Execer, log *slog.Logger, f unhealthyFunc, clk clock.Clock) *prober {
	return &prober{rt: rt, log: log, onUnhealthy: f, clock: clock.Or(clk), workers: map[string]*probeWorker{}}
}

// readySuffix and startupSuffix key a container's readiness and startup
// probe workers.
const (
	readySuffix   = "/ready"
	startupSuffix = "/startup"
)

// started reports whether the container's startup probe has passed
// since the container started. False while its worker is not running.
func (p *prober) started(id string) bool {
	p.mu.Lock()
	w := p.workers[id+startupSuffix]
	p.mu.Unlock()
	return w != nil && w.hasPassed()
}

// hasPassed reports whether a startup worker's probe has passed.
func (w *probeWorker) hasPassed() bool {
	if w.passed == nil {
		return false
	}
	select {
	case <-w.passed:
		return true
	default:
		return false
	}
}

// ready reports whether the container's readiness probe passes: it has
// passed since the container started and not failed failureThreshold
// times in a row since. False while its worker is not running.
func (p *prober) ready(id string) bool {
	p.mu.Lock()
	w := p.workers[id+readySuffix]
	p.mu.Unlock()
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healthy
}

// healthy reports the container's liveness probe state; a container
// without a probe is healthy while it runs.
func (p *prober) healthy(id string) bool {
	p.mu.Lock()
	w := p.workers[id]
	p.mu.Unlock()
	if w == nil {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.healthy
}

// probeTarget is what one worker probes.
type probeTarget struct {
	pod, slot, id string
	ip            string
	probe         manifest.Probe
	ports         []manifest.Port
	grace         time.Duration
	// readiness: the probe only says whether the container is ready; it
	// never restarts it.
	readiness bool
	// startup: the probe runs until it first passes; the container's
	// other probes wait for it (afterStartup).
	startup bool
}

// probeKind names a target's probe in logs and events.
func (t probeTarget) probeKind() string {
	switch {
	case t.startup:
		return "startup"
	case t.readiness:
		return "readiness"
	}
	return "liveness"
}

// update makes the running workers match the probes of the desired pods'
// running containers; the workers it starts run until ctx ends at the
// latest. It makes no engine calls.
func (p *prober) update(ctx context.Context, pods []Pod, actual []hruntime.Container, specs *specMemos) {
	want := probeTargets(pods, actual, specs)
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, w := range p.workers {
		// A startup worker that passed has ended for good: kept, not run
		// again while its container runs.
		if t, ok := want[id]; !ok || targetKey(t) != w.key || w.ended() && !w.hasPassed() {
			p.stopLocked(id)
			if cid, ok := strings.CutSuffix(id, startupSuffix); ok {
				// Its container's other workers wait for the worker
				// stopped: they start again with the next one.
				p.stopLocked(cid)
				p.stopLocked(cid + readySuffix)
			}
		}
	}
	// Startup workers first: the others of their container wait for them.
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if t := want[id]; t.startup {
			p.start(ctx, id, t, nil)
		}
	}
	for id, t := range want {
		if t.startup {
			continue
		}
		var after chan struct{}
		if sw := p.workers[t.id+startupSuffix]; sw != nil {
			after = sw.passed
		}
		p.start(ctx, id, t, after)
	}
}

// probeTargets are the probes of the desired pods' running containers,
// by worker key; specs, when not nil, hold the pods' spec hashes.
func probeTargets(pods []Pod, actual []hruntime.Container, specs *specMemos) map[string]probeTarget {
	byPod := map[string][]hruntime.Container{}
	for _, c := range actual {
		byPod[c.Pod()] = append(byPod[c.Pod()], c)
	}
	want := map[string]probeTarget{}
	for _, pod := range pods {
		m := pod.Manifest
		cs := byPod[m.ID]
		podIP := ""
		for _, c := range cs {
			if c.Slot() == hruntime.InfraName && c.Running() {
				podIP = c.IP
			}
		}
		for i, mc := range m.Containers {
			if mc.LivenessProbe == nil && mc.ReadinessProbe == nil && mc.StartupProbe == nil {
				continue
			}
			hash := specs.containerHash(m, i)
			for _, c := range cs {
				if c.Slot() != mc.Name || c.Hash() != hash || c.State != hruntime.StateRunning {
					continue
				}
				ip := c.IP
				if !pod.NeedsInfra() {
					podIP = ip
				}
				if m.HostNetwork {
					// The host's network: the engine gives no address,
					// and the pod listens on the host's own.
					podIP = "127.0.0.1"
				}
				t := probeTarget{pod: m.ID, slot: mc.Name, id: c.ID, ip: podIP, ports: mc.Ports,
					grace: manifest.Seconds(m.TerminationGracePeriodSeconds)}
				if mc.LivenessProbe != nil {
					t.probe = *mc.LivenessProbe
					want[c.ID] = t
				}
				if mc.ReadinessProbe != nil {
					r := t
					r.probe, r.readiness = *mc.ReadinessProbe, true
					want[c.ID+readySuffix] = r
				}
				if mc.StartupProbe != nil {
					t.probe, t.startup = *mc.StartupProbe, true
					want[c.ID+startupSuffix] = t
				}
			}
		}
	}
	return want
}

// restarted is told that container id was started again: a startup
// probe runs once per start, so a container with one has its workers
// stopped, and the next update starts them anew, the startup probe
// first. Others keep theirs (a liveness worker waits its initial delay
// again by itself).
func (p *prober) restarted(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.workers[id+startupSuffix]; !ok {
		return
	}
	p.stopLocked(id + startupSuffix)
	p.stopLocked(id)
	p.stopLocked(id + readySuffix)
}

// stopLocked stops the worker of id, if any (stopAll joins it). The
// caller holds p.mu.
func (p *prober) stopLocked(id string) {
	if w, ok := p.workers[id]; ok {
		w.cancel()
		delete(p.workers, id)
	}
}

// start starts the worker of target t under id unless one runs; after,
// when not nil, is closed once the container's startup probe passed: the
// worker waits for it. The caller holds p.mu.
func (p *prober) start(ctx context.Context, id string, t probeTarget, after chan struct{}) {
	if _, ok := p.workers[id]; ok {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	// A liveness probe holds a container healthy until it fails; a
	// readiness probe holds it not ready until it passes.
	w := &probeWorker{key: targetKey(t), cancel: cancel, done: make(chan struct{}), healthy: !t.readiness && !t.startup}
	if t.startup {
		w.passed = make(chan struct{})
	}
	p.workers[id] = w
	p.running.Add(1)
	go func() {
		defer p.running.Done()
		if after != nil {
			select {
			case <-after:
			case <-wctx.Done():
				close(w.done)
				return
			}
		}
		p.run(wctx, w, t)
	}()
}

// ended reports whether the worker's goroutine has returned (its context
// ended).
func (w *probeWorker) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func targetKey(t probeTarget) string {
	return fmt.Sprintf("%s|%s|%+v|%+v|%+v|%+v", t.probeKind(), t.ip, t.probe, t.probe.HTTPGet, t.probe.TCPSocket, t.probe.Exec)
}

// stopAll stops every worker and waits until all of their goroutines,
// those update stopped included, have returned. The caller must not hold
// the sync lock (a worker restarting its container takes it).
func (p *prober) stopAll() {
	p.mu.Lock()
	ws := p.workers
	p.workers = map[string]*probeWorker{}
	p.mu.Unlock()
	for _, w := range ws {
		w.cancel()
	}
	p.running.Wait()
}

func (p *prober) run(ctx context.Context, w *probeWorker, t probeTarget) {
	defer close(w.done)
	pr := t.probe
	if !clock.Sleep(ctx, p.clock, manifest.Seconds(pr.InitialDelaySeconds)) {
		return
	}
	// At least a second each, as in Kubernetes: a zero period would spin
	// and a zero timeout would fail every check before it starts.
	period := max(manifest.Seconds(pr.PeriodSeconds), time.Second)
	timeout := max(manifest.Seconds(pr.TimeoutSeconds), time.Second)
	failures := 0
	for {
		err := p.check(ctx, t, timeout)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			failures = 0
		} else {
			failures++
			p.log.Debug("probe failed", "pod", t.pod, "container", t.slot, "probe", t.probeKind(), "failures", failures, "error", err)
		}
		if t.startup && err == nil {
			// Passed: the container's other probes start, and a rollout
			// waiting for it may go on.
			close(w.passed)
			if p.onReady != nil {
				p.onReady()
			}
			return
		}
		w.mu.Lock()
		was := w.healthy
		if t.readiness {
			w.healthy = err == nil || (was && failures < int(pr.FailureThreshold))
		} else {
			w.healthy = failures < int(pr.FailureThreshold)
		}
		changed := was != w.healthy
		w.mu.Unlock()
		if t.readiness {
			if changed && p.onReady != nil {
				p.onReady()
			}
		} else if failures >= int(pr.FailureThreshold) {
			p.onUnhealthy(ctx, t.pod, t.slot, t.id, t.ip, t.probeKind()+" probe: "+err.Error(), t.grace)
			failures = 0
			// Give the restarted container its initial delay again.
			if !clock.Sleep(ctx, p.clock, manifest.Seconds(pr.InitialDelaySeconds)) {
				return
			}
		}
		if !clock.Sleep(ctx, p.clock, period) {
			return
		}
	}
}

// check runs the probe once.
func (p *prober) check(ctx context.Context, t probeTarget, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pr := t.probe
	switch pr.Type {
	case manifest.ProbeExec:
		code, err := p.rt.Exec(ctx, t.id, pr.Exec.Command)
		if err != nil {
			return fmt.Errorf("exec %s: %w", pr.Exec.Command[0], err)
		}
		if code != 0 {
			return fmt.Errorf("exec %s exited with %d", pr.Exec.Command[0], code)
		}
		return nil
	case manifest.ProbeTCP:
		addr, err := probeAddr(t, "", pr.TCPSocket.Port)
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("tcp %s: %w", addr, err)
		}
		return conn.Close()
	case manifest.ProbeHTTP:
		addr, err := probeAddr(t, pr.HTTPGet.Host, pr.HTTPGet.Port)
		if err != nil {
			return err
		}
		return httpGet(ctx, addr, *pr.HTTPGet)
	case manifest.ProbeGRPC:
		addr, err := probeAddr(t, "", pr.GRPC.Port)
		if err != nil {
			return err
		}
		return grpcHealth(ctx, addr, pr.GRPC.Service)
	}
	return fmt.Errorf("unknown probe type %q", pr.Type)
}

// Bounds of what a gRPC probe reads of the pod's answer, and of the text
// a probe's error keeps of it.
const (
	maxGRPCHeaderBytes = 16 << 10
	maxGRPCAnswerBytes = 1 << 10
	maxProbeErrorBytes = 256
)

// grpcHealth asks the gRPC health service at addr (the pod's ip:port,
// without TLS) about service, as kubelet's gRPC probe does: SERVING is
// healthy; any other answer, or none within ctx, is the error.
func grpcHealth(ctx context.Context, addr, service string) error {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", a)
		}),
		// The pod chooses what it answers: a health answer is a few
		// bytes, its headers a few hundred.
		grpc.WithMaxHeaderListSize(maxGRPCHeaderBytes),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxGRPCAnswerBytes)))
	if err != nil {
		return fmt.Errorf("grpc %s: %w", addr, err)
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		return fmt.Errorf("grpc %s: %s", addr, textcap.Truncate(status.Convert(err).Message(), maxProbeErrorBytes))
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("grpc %s: service %q is %s", addr, service, s)
	}
	return nil
}

// podClient is the HTTP client of one probe of the pod at addr (ip:port):
// it connects to addr only, through no proxy, and follows a redirect only
// when it stays on addr, at most 10 of them. A redirect anywhere else, the
// host's loopback included, is not followed: its 3xx answer is the
// probe's answer, and healthy, as kubelet treats a redirect to another
// host (kubelet compares host names only; this compares host and port,
// since another port of a host address may be another service).
func podClient(addr string) *http.Client {
	var d net.Dialer
	return &http.Client{
		Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
				if a != addr {
					return nil, fmt.Errorf("probe refused to connect to %s: not the pod's address %s", a, addr)
				}
				return d.DialContext(ctx, network, a)
			},
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != "http" || req.URL.Host != addr {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			return nil
		},
	}
}

// probeAddr resolves a probe's host and port (a number or a port name of
// the container) against the pod's address. The host may only be empty
// (the pod's address) or the pod's own IP: a probe never reaches anything
// but its pod.
func probeAddr(t probeTarget, host, port string) (string, error) {
	n, err := strconv.Atoi(port)
	if err != nil {
		for _, p := range t.ports {
			if p.Name == port {
				n = p.ContainerPort
			}
		}
		if n == 0 {
			return "", fmt.Errorf("probe port %q is not a port of the container", port)
		}
	}
	if t.ip == "" {
		return "", fmt.Errorf("the pod has no IP address to probe")
	}
	if host != "" && !sameIP(host, t.ip) {
		return "", fmt.Errorf("probe host %q is not the pod's address %s: a probe only reaches its own pod", host, t.ip)
	}
	return net.JoinHostPort(t.ip, strconv.Itoa(n)), nil
}

// sameIP reports whether a and b are the same IP address.
func sameIP(a, b string) bool {
	x, err1 := netip.ParseAddr(a)
	y, err2 := netip.ParseAddr(b)
	return err1 == nil && err2 == nil && x.Unmap() == y.Unmap()
}
