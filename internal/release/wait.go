package release

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// waitHost is a host a wave waits for, the sources written for it and
// the pods they make (ID to spec hash).
type waitHost struct {
	name    string
	sources []string
	pods    map[string]string
}

// waitWave waits until every host reports the release rev on its sources
// with its pods' rollouts done (nil, ""), a host reports a pod of the
// release rolled back or failed, or timeout passes on the clock (the
// reason why it halts the release). Hosts' status documents are read from
// etcd and watched: no polling.
func (p *Publisher) waitWave(ctx context.Context, rev string, hosts []waitHost, timeout time.Duration) (string, error) {
	wctx, cancel := p.withTimeout(ctx, timeout)
	defer cancel()
	w := newWaiter(p.Prefix, rev, hosts, timeout)
	w.progressed = p.progressed
	for {
		if reason, end, err := p.pass(ctx, wctx, w); end {
			return reason, err
		}
	}
}

// withTimeout returns a context that ends with ctx or when d passed on
// the clock; cancel releases it and its timer.
func (p *Publisher) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancel(ctx)
	t := p.clock().NewTimer(d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.Stop()
		select {
		case <-t.C():
			cancel()
		case <-wctx.Done():
		}
	}()
	return wctx, func() { cancel(); <-done }
}

// pass lists the hosts' status keys once, then watches them from there,
// until the wave ends (end) or the watch does. wctx is ctx bounded by the
// wave's timeout.
func (p *Publisher) pass(ctx, wctx context.Context, w *waiter) (reason string, end bool, err error) {
	gctx, gcancel := context.WithTimeout(wctx, p.requestTimeout())
	resp, err := p.Etcd.Get(gctx, w.statusPrefix, clientv3.WithPrefix())
	gcancel()
	if err != nil {
		if reason, end, err := w.ended(ctx, wctx); end {
			return reason, end, err
		}
		// etcd unreachable (a member down, no leader): the hosts go on
		// without it; try again until the wave's time is up.
		w.etcdErr = err
		p.pause(wctx)
		return "", false, nil
	}
	w.etcdErr = nil
	for _, kv := range resp.Kvs {
		if reason := w.see(string(kv.Key), kv.Value); reason != "" {
			return reason, true, nil
		}
	}
	if w.complete() {
		return "", true, nil
	}
	if reason, end := w.watch(wctx, p.Etcd, resp.Header.Revision+1); end {
		return reason, true, nil
	}
	return w.ended(ctx, wctx)
}

// pause waits the pause between retries, or until ctx ends.
func (p *Publisher) pause(ctx context.Context) {
	t := p.clock().NewTimer(p.retry())
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C():
	}
}

// waiter is where a wave's hosts stand, from their status documents.
type waiter struct {
	rev          string
	hosts        []waitHost
	timeout      time.Duration
	statusPrefix string
	byKey        map[string]waitHost
	// progress says what each host waits for; done the hosts that
	// reported the release complete.
	progress map[string]string
	done     map[string]bool
	// etcdErr is the last failed read, while etcd fails.
	etcdErr error
	// progressed, when set, learns each change of progress.
	progressed func(host, waiting string)
}

func newWaiter(prefix, rev string, hosts []waitHost, timeout time.Duration) *waiter {
	statusPrefix, _, _ := reporter.Keys(prefix, "") // prefix/status/
	w := &waiter{rev: rev, hosts: hosts, timeout: timeout, statusPrefix: statusPrefix,
		byKey: map[string]waitHost{}, progress: map[string]string{}, done: map[string]bool{}}
	for _, h := range hosts {
		key, _, _ := reporter.Keys(prefix, h.name)
		w.byKey[key] = h
		w.progress[h.name] = "no status reported"
	}
	return w
}

func (w *waiter) complete() bool { return len(w.done) == len(w.hosts) }

// watch follows the status keys from store revision from until a host
// halts the release or every host is done (end), or the watch ends.
func (w *waiter) watch(wctx context.Context, etcd Etcd, from int64) (reason string, end bool) {
	watch := etcd.Watch(clientv3.WithRequireLeader(wctx), w.statusPrefix, clientv3.WithPrefix(), clientv3.WithRev(from))
	for wresp := range watch {
		if wresp.Err() != nil {
			break
		}
		for _, ev := range wresp.Events {
			if ev.Type != clientv3.EventTypePut {
				continue
			}
			if reason := w.see(string(ev.Kv.Key), ev.Kv.Value); reason != "" {
				return reason, true
			}
		}
		if w.complete() {
			return "", true
		}
	}
	return "", false
}

// ended says whether the wave's wait is over because ctx ended (its
// error) or the wave's time is up (why it halts).
func (w *waiter) ended(ctx, wctx context.Context) (reason string, end bool, err error) {
	switch {
	case ctx.Err() != nil:
		return "", true, ctx.Err()
	case wctx.Err() != nil:
		return w.timedOut(), true, nil
	}
	return "", false, nil
}

// see evaluates the status document value at key: a reason to halt, or "".
func (w *waiter) see(key string, value []byte) string {
	h, ok := w.byKey[key]
	if !ok || w.done[h.name] {
		return ""
	}
	var doc api.Document
	if err := json.Unmarshal(value, &doc); err != nil {
		w.setProgress(h.name, "status unreadable: "+err.Error())
		return ""
	}
	fin, halt, waiting := releaseProgress(doc, w.rev, h.sources, h.pods)
	switch {
	case halt != "":
		return "host " + h.name + ": " + halt
	case fin:
		w.done[h.name] = true
	default:
		w.setProgress(h.name, waiting)
	}
	return ""
}

func (w *waiter) setProgress(host, waiting string) {
	if w.progress[host] == waiting {
		return
	}
	w.progress[host] = waiting
	if w.progressed != nil {
		w.progressed(host, waiting)
	}
}

// timedOut is why a wave whose time is up halts: what each host not done
// waits for.
func (w *waiter) timedOut() string {
	var parts []string
	for _, h := range w.hosts {
		if !w.done[h.name] {
			parts = append(parts, h.name+": "+w.progress[h.name])
		}
	}
	if w.etcdErr != nil {
		parts = append(parts, "etcd: "+w.etcdErr.Error())
	}
	return fmt.Sprintf("not reported within --wave-timeout %s: %s", w.timeout, strings.Join(parts, "; "))
}

// releaseProgress says where a host stands with release rev, written to
// its sources: done when every source reports rev and no pod of them is
// still rolling out or pending at rev; halt (why) when a pod of rev was
// rolled back, or failed with no rollback coming; else what it waits for
// (a failed pod its host is rolling back halts the release once its
// rollback shows, with the rollback's reason).
func releaseProgress(doc api.Document, rev string, srcs []string, pods map[string]string) (done bool, halt, waiting string) {
	of := map[string]bool{}
	for _, s := range srcs {
		of[s] = true
	}
	halt, failing := halting(doc, rev, of, pods)
	switch {
	case halt != "":
		return false, halt, ""
	case failing != "":
		return false, "", failing
	}
	if w := sourcesBehind(doc, rev, srcs); w != "" {
		return false, "", w
	}
	if w := podsBehind(doc, rev, of, pods); w != "" {
		return false, "", w
	}
	return true, "", ""
}

// halting returns why a pod of the release's sources (of) halts it (rolled
// back, or failed with no rollback coming), or failing: a failed pod its
// host is about to roll back.
func halting(doc api.Document, rev string, of map[string]bool, pods map[string]string) (halt, failing string) {
	for _, p := range doc.Pods {
		if !of[p.Source] {
			continue
		}
		if r := p.Rollout; r != nil && r.State == hsync.RolloutRolledBack && (r.Revision == rev || (r.Hash != "" && r.Hash == pods[p.ID])) {
			why := ""
			if r.Reason != "" {
				why = ": " + r.Reason
			}
			return fmt.Sprintf("pod %s rolled back%s", p.ID, why), ""
		}
		if p.Phase == hsync.PhaseFailed && p.Revision == rev {
			if rollingBack(p) {
				// The host is about to put the last ready version back:
				// its rollback says why.
				failing = fmt.Sprintf("pod %s failed (%s); the host rolls it back", p.ID, p.Reason)
				continue
			}
			why := p.Reason
			if p.Message != "" && !strings.HasPrefix(p.Message, p.Reason) {
				why += ": " + p.Message
			} else if p.Message != "" {
				why = p.Message
			}
			return fmt.Sprintf("pod %s failed: %s", p.ID, why), ""
		}
	}
	return "", failing
}

// sourcesBehind says which of srcs does not report rev yet, or "".
func sourcesBehind(doc api.Document, rev string, srcs []string) string {
	for _, name := range srcs {
		i := slices.IndexFunc(doc.Sources, func(s sources.Status) bool { return s.Name == name })
		switch {
		case i < 0:
			return fmt.Sprintf("source %s not in its status", name)
		case doc.Sources[i].Revision != rev:
			w := fmt.Sprintf("source %s at %s", name, cmp.Or(ShortRev(doc.Sources[i].Revision), "no revision"))
			if e := doc.Sources[i].Error; e != "" {
				w += " (error: " + e + ")"
			}
			return w
		}
	}
	return ""
}

// podsBehind says which pod of the release is not at its version yet, or
// still rolling out, or "". A source may report the release before the
// sync that applies it: every pod must report, at its version.
func podsBehind(doc api.Document, rev string, of map[string]bool, pods map[string]string) string {
	for _, id := range slices.Sorted(maps.Keys(pods)) {
		i := slices.IndexFunc(doc.Pods, func(p hsync.PodStatus) bool { return p.ID == id })
		if i < 0 {
			return fmt.Sprintf("pod %s not reported yet", id)
		}
		p := doc.Pods[i]
		switch r := p.Rollout; {
		case p.Revision != rev:
			// Not synced since its source took the release.
			return fmt.Sprintf("pod %s not synced at the release yet", id)
		case r != nil && r.Hash != "" && pods[id] != "" && r.Hash != pods[id]:
			if r.State == hsync.RolloutHeld {
				return fmt.Sprintf("pod %s held", id)
			}
			return fmt.Sprintf("pod %s not at the release's version yet", id)
		case r != nil && r.State == hsync.RolloutProgressing:
			return fmt.Sprintf("pod %s rollout Progressing", id)
		case r == nil && p.Phase == hsync.PhasePending:
			return fmt.Sprintf("pod %s Pending", id)
		}
	}
	for _, p := range doc.Pods {
		if r := p.Rollout; of[p.Source] && r != nil && r.State == hsync.RolloutProgressing {
			return fmt.Sprintf("pod %s rollout Progressing", p.ID)
		}
	}
	return ""
}

// rollingBack reports whether a failed pod's update is about to be rolled
// back by its host: still Progressing, with a ready version before it,
// and rollback Auto. A new pod, or one with rollback Never or Hold, stays
// failed: that halts a release at once.
func rollingBack(p hsync.PodStatus) bool {
	r := p.Rollout
	if r == nil || r.State != hsync.RolloutProgressing || r.PreviousHash == "" {
		return false
	}
	return p.Manifest == nil || p.Manifest.Rollback == "" || p.Manifest.Rollback == manifest.RollbackAuto
}
