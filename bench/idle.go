package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"
)

// idlePhase deploys n pods with one hostlet and, with them running,
// measures: the idle CPU and RSS of that hostlet (webhook config: git
// interval 1h, sync.interval 10s); the same after a restart with a 1 s git
// poll; and, after another restart with sync.interval 1s and the engine
// behind the counting proxy, the Docker API calls per no-op sync. Each
// restart must adopt the pods without restarting any of them.
func (e *env) idlePhase(ctx context.Context, n int) error {
	instance, r := e.runID+"-idle", e.repos["idle"]
	ip := &idlePods{
		n: n, instance: instance, r: r, label: "io.hostlet.instance=" + instance,
		base: hostletConfig{
			instance: instance, stateDir: filepath.Join(e.dir, "state", instance),
			gitURL: e.git.url(r.name), gitInterval: time.Hour, syncInterval: 10 * time.Second,
			infraImage: e.pause, tokenFile: e.tokFile,
		},
	}
	if err := e.idleDeploy(ctx, ip); err != nil {
		return err
	}
	if err := e.idleRestartPolling(ctx, ip); err != nil {
		return err
	}
	return e.idleCountCalls(ctx, ip)
}

// idlePods are the pods idlePhase deploys and what its steps share.
type idlePods struct {
	n        int
	instance string
	r        *repo
	base     hostletConfig // the webhook config
	label    string        // of the instance's containers
	ids      []string      // the pods' containers, sorted, once deployed
}

// idleDeploy deploys the pods with the webhook config and measures that
// hostlet idle (step 1 of idlePhase).
func (e *env) idleDeploy(ctx context.Context, ip *idlePods) error {
	logf("idle: deploying %d pods", ip.n)
	if err := copyFresh(e.bin, e.bin); err != nil {
		return err
	}
	if e.o.evictBinary {
		if err := evictPageCache(e.bin); err != nil {
			return err
		}
	}
	pprof := ""
	if e.o.profile {
		pp, err := freePorts(1)
		if err != nil {
			return err
		}
		pprof = fmt.Sprintf("127.0.0.1:%d", pp[0])
	}
	h, err := startHostlet(e.bin, e.dir, ip.instance+"-a", ip.base, e.token, pprof)
	if err != nil {
		return err
	}
	defer h.stop(15 * time.Second)
	head, err := ip.r.head(ctx)
	if err != nil {
		return err
	}
	if err := h.waitRevision(ctx, head, time.Minute); err != nil {
		return err
	}
	ports, err := freePorts(ip.n)
	if err != nil {
		return err
	}
	if err := ip.r.commit(ctx, "idle pods", podFiles(e.runID, e.image, e.o.grace, shapeSingle, ports, "v1")); err != nil {
		return err
	}
	if err := ip.r.push(ctx); err != nil {
		return err
	}
	if err := h.syncNow(ctx); err != nil {
		return err
	}
	if _, err := waitAnswer(ctx, ports, "v1", e.o.stepTimeout); err != nil {
		return err
	}
	if ip.ids, err = containerIDs(ctx, e.cli, ip.label); err != nil {
		return err
	}
	slices.Sort(ip.ids)
	rec, err := e.measureIdle(ctx, h, "webhook config: git interval 1h, sync.interval 10s (the process that deployed the pods)", ip.n, e.o.profile)
	if err != nil {
		return err
	}
	e.res.Idle = append(e.res.Idle, rec)
	_, err = h.stopHostlet()
	return err
}

// idleRestartPolling restarts with a 1 s git poll, which adopts the pods,
// and measures it idle (step 2 of idlePhase).
func (e *env) idleRestartPolling(ctx context.Context, ip *idlePods) error {
	poll := ip.base
	poll.gitInterval = time.Second
	h, err := startHostlet(e.bin, e.dir, ip.instance+"-b", poll, e.token, "")
	if err != nil {
		return err
	}
	defer h.stop(15 * time.Second)
	if err := h.waitRevision(ctx, mustHead(ctx, ip.r), time.Minute); err != nil {
		return err
	}
	rec, err := e.measureIdle(ctx, h, "poll config: git interval 1s, sync.interval 10s (restarted; adopted the pods)", ip.n, false)
	if err != nil {
		return err
	}
	e.res.Idle = append(e.res.Idle, rec)
	if _, err := h.stopHostlet(); err != nil {
		return err
	}
	return e.checkSameContainers(ctx, ip.label, ip.ids, "restart with the poll config")
}

// idleCountCalls restarts behind the counting proxy with sync.interval 1s,
// counts the Docker API calls per no-op sync, then removes the pods
// through that hostlet (not timed): steps 3 and 4 of idlePhase.
func (e *env) idleCountCalls(ctx context.Context, ip *idlePods) error {
	proxy, err := startCountingProxy(filepath.Join(e.dir, "docker.sock"), dockerSocket(e.cli.DaemonHost()))
	if err != nil {
		return err
	}
	defer proxy.close()
	count := ip.base
	count.syncInterval = time.Second
	count.dockerHost = "unix://" + filepath.Join(e.dir, "docker.sock")
	h, err := startHostlet(e.bin, e.dir, ip.instance+"-c", count, e.token, "")
	if err != nil {
		return err
	}
	defer h.stop(15 * time.Second)
	if err := h.waitRevision(ctx, mustHead(ctx, ip.r), time.Minute); err != nil {
		return err
	}
	if e.res.APICalls, err = e.countNoopCalls(ctx, proxy, h, ip.n); err != nil {
		return err
	}
	if err := e.checkSameContainers(ctx, ip.label, ip.ids, "restart behind the counting proxy"); err != nil {
		return err
	}

	if err := ip.r.commit(ctx, "idle: remove", podFiles(e.runID, e.image, e.o.grace, shapeSingle, nil, "")); err != nil {
		return err
	}
	if err := ip.r.push(ctx); err != nil {
		return err
	}
	if err := h.syncNow(ctx); err != nil {
		return err
	}
	if _, err := waitNoContainers(ctx, e.cli, ip.label, e.o.stepTimeout); err != nil {
		return err
	}
	_, err = h.stopHostlet()
	return err
}

// countNoopCalls counts the Docker API calls through proxy over
// e.o.countSyncs no-op syncs of h (n pods), after at least three syncs.
func (e *env) countNoopCalls(ctx context.Context, proxy *countingProxy, h *hostlet, n int) (*apiCalls, error) {
	startup, _ := proxy.snapshot()
	if _, err := h.waitSyncs(ctx, 3, time.Minute); err != nil {
		return nil, err
	}
	// Both ends of the window sit just after a sync: wait for its list
	// call, give it 300 ms to finish, then read counts and syncs.
	align := func() (map[string]int, int, error) {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := proxy.waitRequest(wctx); err != nil {
			return nil, 0, fmt.Errorf("no Docker API call within 30 s: %w", err)
		}
		if err := sleepCtx(ctx, 300*time.Millisecond); err != nil {
			return nil, 0, err
		}
		c, _ := proxy.snapshot()
		s, err := h.syncs(ctx)
		return c, s, err
	}
	c0, s0, err := align()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	if _, err := h.waitSyncs(ctx, s0+e.o.countSyncs, time.Duration(e.o.countSyncs)*10*time.Second+time.Minute); err != nil {
		return nil, err
	}
	c1, s1, err := align()
	if err != nil {
		return nil, err
	}
	calls := diffCounts(c0, c1)
	total := 0
	for _, v := range calls {
		total += v
	}
	ac := &apiCalls{
		Syncs: s1 - s0, Calls: total, WindowSeconds: time.Since(t0).Seconds(), ByEndpoint: calls,
		StartupCalls: diffCounts(map[string]int{}, startup), Pods: n,
	}
	if ac.Syncs > 0 {
		ac.PerSync = float64(total) / float64(ac.Syncs)
	}
	logf("idle: %d Docker API calls in %d no-op syncs (%.2f per sync): %v", total, ac.Syncs, ac.PerSync, calls)
	return ac, nil
}

func mustHead(ctx context.Context, r *repo) string {
	h, err := r.head(ctx)
	if err != nil {
		return "unknown-head-of-" + r.name
	}
	return h
}

// measureIdle waits settle, then reads CPU and RSS over the idle window.
func (e *env) measureIdle(ctx context.Context, h *hostlet, config string, n int, profile bool) (idleRecord, error) {
	if err := sleepCtx(ctx, e.o.settle); err != nil {
		return idleRecord{}, err
	}
	s0, err := h.syncs(ctx)
	if err != nil {
		return idleRecord{}, err
	}
	u0, err := h.usage()
	if err != nil {
		return idleRecord{}, err
	}
	refsCleared := clearRefs(h.pid()) == nil
	t0 := time.Now()
	var profDone chan error
	if profile {
		profDone = make(chan error, 1)
		go func() {
			profDone <- h.profile(ctx, "profile", int(e.o.idle.Seconds())-1, filepath.Join(e.dir, "cpu-idle.pprof"))
		}()
	}
	logf("idle: measuring %s over %s (%s)", "CPU and RSS", e.o.idle, config)
	if err := sleepCtx(ctx, e.o.idle); err != nil {
		return idleRecord{}, err
	}
	u1, err := h.usage()
	if err != nil {
		return idleRecord{}, err
	}
	el := time.Since(t0)
	var touched int64
	if refsCleared {
		touched, _ = referencedBytes(h.pid())
	}
	s1, err := h.syncs(ctx)
	if err != nil {
		return idleRecord{}, err
	}
	if profile {
		if err := <-profDone; err != nil {
			logf("idle cpu profile: %v", err)
		}
		if err := h.profile(ctx, "heap", 0, filepath.Join(e.dir, "heap-idle.pprof")); err != nil {
			logf("idle heap profile: %v", err)
		}
	}
	rec := idleRecord{
		Config: config, Pods: n, WindowSeconds: el.Seconds(),
		CPUSeconds:          u1.CPUSeconds - u0.CPUSeconds,
		CPUSecondsPerMinute: (u1.CPUSeconds - u0.CPUSeconds) / el.Minutes(),
		RSSBytes:            u1.RSSBytes, HWMBytes: u1.HWMBytes, Syncs: s1 - s0,
		RSSAnonBytes: u1.RSSAnonBytes, RSSFileBytes: u1.RSSFileBytes, TouchedBytes: touched,
	}
	logf("idle: %.3f CPU-s/min, RSS %.1f MiB (anon %.1f, file %.1f; touched in the window %.1f; peak %.1f MiB), %d syncs",
		rec.CPUSecondsPerMinute, mib(rec.RSSBytes), mib(rec.RSSAnonBytes), mib(rec.RSSFileBytes), mib(rec.TouchedBytes), mib(rec.HWMBytes), rec.Syncs)
	return rec, nil
}

// checkSameContainers records whether the containers of label are still
// exactly ids (a hostlet restart must adopt, not recreate).
func (e *env) checkSameContainers(ctx context.Context, label string, ids []string, what string) error {
	now, err := containerIDs(ctx, e.cli, label)
	if err != nil {
		return err
	}
	slices.Sort(now)
	ok := slices.Equal(now, ids)
	detail := fmt.Sprintf("%d containers, same IDs", len(ids))
	if !ok {
		detail = fmt.Sprintf("before %d containers, after %d; IDs differ", len(ids), len(now))
	}
	e.res.Checks = append(e.res.Checks, check{Name: "pods adopted without restart after a " + what, OK: ok, Detail: detail})
	return nil
}
