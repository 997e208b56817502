//go:build faults

package faults

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// expect is what one wait for convergence requires.
type expect struct {
	// from is when the fault (or the step being waited for) began: time to
	// converge is measured from it, and a destroyed stable container
	// counts from it.
	from time.Time
	// syncAfter: a sync must have started after it (hostlet acted on what
	// it sees now, not on what it saw before).
	syncAfter time.Time
	// want is the desired set to compare with (nil: the model's).
	want map[string]pod
	// stable maps the IDs of containers that must never be destroyed
	// (their pod stayed desired and unchanged) to their pod; a destroy
	// counts from destroyedSince (from when zero).
	stable         map[string]string
	destroyedSince time.Time
	// sourcesOK: every source must report no error (all of them are up).
	sourcesOK bool
	// syncErrorOK: the last sync may have failed (the disk is full).
	syncErrorOK bool
	// timeout overrides -converge.
	timeout time.Duration
}

// verdict is what one look at the engine and hostlet found.
type verdict struct {
	// missing are desired pods with a slot not running the desired version.
	missing []string
	// dup are pod/slot pairs with more than one container.
	dup []string
	// orphans are containers of the instance of no desired pod or slot.
	orphans []string
	// removed are stable pods (desired, unchanged) one of whose containers
	// was destroyed.
	removed []string
	// anew are stable containers hostlet removed and created anew because
	// the engine could no longer start them (a stale task an engine
	// restart left: its recreate event names the container's own ID and
	// says "did not start", or the pod's infra container was created anew
	// for that reason); the pod is not lost, and they are counted apart.
	anew []string
	// hostlet says why hostlet does not count as settled ("" when it does).
	hostlet string
}

func (v verdict) settled() bool {
	return len(v.missing) == 0 && len(v.dup) == 0 && len(v.orphans) == 0 && v.hostlet == ""
}

func (v verdict) String() string {
	var parts []string
	add := func(what string, xs []string) {
		if len(xs) > 0 {
			parts = append(parts, what+" "+strings.Join(xs, ","))
		}
	}
	add("not running:", v.missing)
	add("removed although desired:", v.removed)
	add("duplicates:", v.dup)
	add("orphans:", v.orphans)
	if v.hostlet != "" {
		parts = append(parts, "hostlet: "+v.hostlet)
	}
	return strings.Join(parts, "; ")
}

// check looks once.
func (s *suite) check(ctx context.Context, e expect) verdict {
	var v verdict
	want := e.want
	if want == nil {
		want = s.m.desired()
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := s.cli.ContainerList(lctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+s.instance))})
	if err != nil {
		v.hostlet = "engine: " + err.Error()
		return v
	}
	bySlot := map[string][]container.Summary{}
	for _, c := range list {
		id, slot := c.Labels[hruntime.LabelPod], c.Labels[hruntime.LabelContainer]
		p, ok := want[id]
		if !ok || !slices.Contains(p.slots(), slot) {
			v.orphans = append(v.orphans, fmt.Sprintf("%s/%s(%s)", id, slot, c.State))
			continue
		}
		bySlot[id+"/"+slot] = append(bySlot[id+"/"+slot], c)
	}
	for k, cs := range bySlot {
		if len(cs) > 1 {
			v.dup = append(v.dup, fmt.Sprintf("%s×%d", k, len(cs)))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		p := want[id]
		for _, slot := range p.slots() {
			ok := slices.ContainsFunc(bySlot[id+"/"+slot], func(c container.Summary) bool {
				named := p.Named == "" || slot != "app" || slices.Contains(c.Names, "/"+p.Named)
				return c.State == hruntime.StateRunning && c.Labels[genLabel] == strconv.Itoa(p.Gen) && named
			})
			if !ok {
				v.missing = append(v.missing, id)
				break
			}
		}
	}
	removed := map[string]bool{}
	since := e.destroyedSince
	if since.IsZero() {
		since = e.from
	}
	var recreated []hostletEvent
	for cid := range s.w.destroyed(since) {
		pod, ok := e.stable[cid]
		if !ok {
			continue
		}
		if recreated == nil {
			recreated = s.h.recreatedAnew(ctx, since)
		}
		if createdAnew(recreated, pod, cid) {
			v.anew = append(v.anew, pod+"("+cid[:12]+")")
			continue
		}
		removed[pod] = true
	}
	v.removed = slices.Sorted(maps.Keys(removed))
	sort.Strings(v.anew)
	sort.Strings(v.dup)
	sort.Strings(v.orphans)
	v.hostlet = s.hostletProblem(ctx, e)
	return v
}

// hostletProblem says why hostlet does not count as settled: it must run,
// answer, have synced since syncAfter without an error, and (sourcesOK)
// see every source without an error.
func (s *suite) hostletProblem(ctx context.Context, e expect) string {
	if !s.h.alive() {
		return "not running (" + s.h.exitErr() + ")"
	}
	st, err := s.h.status(ctx)
	if err != nil {
		return err.Error()
	}
	if st.LastSync.Start.Before(e.syncAfter) {
		return "no sync since " + e.syncAfter.Format("15:04:05.000")
	}
	if st.LastSync.Error != "" && !e.syncErrorOK {
		return "last sync: " + st.LastSync.Error
	}
	if e.sourcesOK {
		for _, src := range st.Sources {
			if src.Error != "" {
				return "source " + src.Name + ": " + src.Error
			}
		}
	}
	return ""
}

// wait polls until the invariants hold, or the deadline, and adds the
// outcome to inj. It reports whether they hold; false also when hostlet
// is not running, or an earlier wait of inj found it so (the steps after
// it would only repeat that).
func (s *suite) wait(inj *injection, what string, e expect) bool {
	s.t.Helper()
	if inj.hostletDown {
		return false
	}
	timeout := cmp.Or(e.timeout, *flagConverge)
	deadline := e.from.Add(timeout)
	var v verdict
	for {
		v = s.check(s.ctx, e)
		if v.settled() {
			break
		}
		if !s.h.alive() || time.Now().After(deadline) || s.ctx.Err() != nil {
			break
		}
		select {
		case <-s.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	took := time.Since(e.from)
	for _, id := range v.removed {
		inj.lost[id] = true
	}
	inj.anew = max(inj.anew, len(v.anew))
	if len(v.anew) > 0 {
		s.t.Logf("  %s: created anew (the engine could not start them again): %s", what, strings.Join(v.anew, ", "))
	}
	if !v.settled() {
		inj.unconverged = true
		for _, id := range v.missing {
			inj.lost[id] = true
		}
		inj.dup = max(inj.dup, len(v.dup))
		inj.orphans = max(inj.orphans, len(v.orphans))
		msg := fmt.Sprintf("%s: not converged within %s: %s", what, timeout, v)
		if !s.h.alive() {
			inj.hostletDown = true
			msg = fmt.Sprintf("%s: %s; its log ends:\n%s", what, v, indent(tail(s.h.log, 3)))
		} else {
			// A rare failure in CI can be read only from what it logged.
			s.t.Logf("  %s: hostlet's log ends:\n%s\n  the engine's last warnings and errors:\n%s", what,
				indent(clipLines(tail(s.h.log, failureLogLines), 400)), indent(clipLines(tailOf(s.eng.log, failureLogLines/4, engineTrouble), 400)))
		}
		inj.fail("%s", msg)
		return false
	}
	inj.converge = max(inj.converge, took)
	s.t.Logf("  %s: converged in %s", what, took.Round(10*time.Millisecond))
	if len(v.removed) > 0 {
		inj.fail("%s: %s", what, v)
	}
	return true
}

// failureLogLines is how many of hostlet's last log lines an unconverged
// injection prints.
const failureLogLines = 80

// engineTrouble reports whether a line of dockerd's log is a warning or
// an error.
func engineTrouble(line string) bool {
	return strings.Contains(line, "level=warning") || strings.Contains(line, "level=error") || strings.Contains(line, "level=fatal")
}

// clipLines cuts each line of s to at most n bytes.
func clipLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > n {
			lines[i] = l[:n] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(s, "\n", "\n      ")
}

// stable returns, for every desired pod not in except, the IDs of its
// containers now, mapped to the pod.
func (s *suite) stable(except map[string]bool) map[string]string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	list, err := s.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+s.instance))})
	if err != nil {
		s.t.Fatalf("list containers: %v", err)
	}
	want := s.m.desired()
	out := map[string]string{}
	for _, c := range list {
		id := c.Labels[hruntime.LabelPod]
		if _, ok := want[id]; ok && !except[id] {
			out[c.ID] = id
		}
	}
	return out
}

// injection is the outcome of one injected fault.
type injection struct {
	class       string
	lost        map[string]bool
	anew        int
	dup         int
	orphans     int
	unconverged bool
	// converge is the longest wait that converged.
	converge time.Duration
	// hostletDown: a wait found hostlet not running.
	hostletDown bool
	failures    []string
}

func newInjection(class string) *injection {
	return &injection{class: class, lost: map[string]bool{}}
}

func (inj *injection) fail(format string, args ...any) {
	inj.failures = append(inj.failures, fmt.Sprintf(format, args...))
}

func (inj *injection) ok() bool { return len(inj.failures) == 0 }

// classResult adds up the injections of one class.
type classResult struct {
	name                                     string
	injected, lost, dup, orphans, unconverge int
	anew                                     int
	failed                                   int
	maxConverge                              time.Duration
	failures                                 []string
}

func (r *classResult) record(inj *injection) {
	r.injected++
	r.lost += len(inj.lost)
	r.anew += inj.anew
	r.dup += inj.dup
	r.orphans += inj.orphans
	if inj.unconverged {
		r.unconverge++
	}
	if !inj.ok() {
		r.failed++
	}
	r.maxConverge = max(r.maxConverge, inj.converge)
	for _, f := range inj.failures {
		r.failures = append(r.failures, fmt.Sprintf("#%d %s", r.injected, f))
	}
}

func (r *classResult) add(o *classResult) {
	r.injected += o.injected
	r.lost += o.lost
	r.anew += o.anew
	r.dup += o.dup
	r.orphans += o.orphans
	r.unconverge += o.unconverge
	r.failed += o.failed
	r.maxConverge = max(r.maxConverge, o.maxConverge)
}

func (r *classResult) ok() bool { return r.failed == 0 && r.injected > 0 }

func (r *classResult) summary() string {
	verdict := "ok"
	if !r.ok() {
		verdict = "FAIL"
	}
	return fmt.Sprintf("injected=%d lost=%d anew=%d dup=%d orphans=%d unconverged=%d failed=%d maxConverge=%.1fs %s",
		r.injected, r.lost, r.anew, r.dup, r.orphans, r.unconverge, r.failed, r.maxConverge.Seconds(), verdict)
}

func (r *classResult) line() string { return fmt.Sprintf("%-20s %s", r.name, r.summary()) }

// sortedPods lists pods by ID.
func sortedPods(pods map[string]pod) []pod {
	return slices.SortedFunc(maps.Values(pods), func(a, b pod) int { return strings.Compare(a.ID, b.ID) })
}

// stateFiles lists hostlet's state files: every regular file under
// stateDir but the git caches (git-cache-truncated's) and the suite's own
// filler.
func (s *suite) stateFiles() []string {
	var out []string
	_ = filepath.WalkDir(s.stateDir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(s.stateDir, p)
		if d.IsDir() && rel == "git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && rel != fillerName {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// hostletEvent is one of hostlet's events (GET /events).
type hostletEvent struct {
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	Pod       string    `json:"pod"`
	Container string    `json:"container"`
	Reason    string    `json:"reason"`
}

// createdAnew reports whether hostlet's events say it created container
// cid of pod anew because the engine could not start it again: a recreate
// whose reason names cid and says it did not start, or the pod's infra
// container created anew (its app containers move with it).
func createdAnew(evs []hostletEvent, pod, cid string) bool {
	for _, ev := range evs {
		if ev.Pod != pod {
			continue
		}
		if strings.Contains(ev.Reason, "did not start") && strings.Contains(ev.Reason, cid) {
			return true
		}
		if strings.Contains(ev.Reason, "infra container created anew") {
			return true
		}
	}
	return false
}
