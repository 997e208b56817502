//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// batch is the pods a kill-mid-create repetition added, for the
// kill-mid-recreate and kill-mid-prune of the same repetition.
type batch struct {
	src string
	ids []string
}

// slotCount counts the containers of the pods in ids.
func (s *suite) slotCount(ids []string) int {
	n := 0
	d := s.m.desired()
	for _, id := range ids {
		n += len(d[id].slots())
	}
	return n
}

// killOn arms a SIGKILL of hostlet on the n-th container event whose
// action is in actions and whose pod is in ids, runs change, and waits for
// the kill. It returns when hostlet is gone, and the time of the kill.
func (s *suite) killOn(inj *injection, what string, actions []events.Action, ids []string, n int, change func() error) time.Time {
	s.t.Helper()
	pid := s.h.cmd.Process.Pid
	match := func(ev event) bool {
		return slices.Contains(actions, events.Action(ev.Action)) && slices.Contains(ids, ev.Pod)
	}
	fired, cancel := s.w.on(match, n, func(event) { _ = syscall.Kill(pid, syscall.SIGKILL) })
	defer cancel()
	if err := change(); err != nil {
		inj.fail("%s: %v", what, err)
	}
	var at time.Time
	select {
	case ev := <-fired:
		at = ev.Time
	case <-time.After(60 * time.Second):
		inj.fail("%s: the kill point (event %d of %v on %v) was not reached within 60s; killed then", what, n, actions, ids)
		at = time.Now()
	}
	s.h.kill9()
	s.t.Logf("%s: hostlet killed (kill -9) at event %d of %v", what, n, actions)
	return at
}

// newBatch makes three new pods for src: the first of two containers, the
// second with a name its manifest chooses.
func (s *suite) newBatch(src string) map[string]pod {
	out := map[string]pod{}
	for i := 0; i < 3; i++ {
		id := s.newID(src)
		out[id] = pod{ID: id, Two: i == 0}
		if i == 1 {
			// Recreated under its chosen name: a kill may come at the
			// rename too.
			out[id] = pod{ID: id, Named: "hf-" + s.instance + "-" + id}
		}
	}
	return out
}

func (s *suite) killMidCreate(rep int, inj *injection) {
	src := pick(s, sourceOrder)
	add := s.newBatch(src)
	ids := slices.Sorted(maps.Keys(add))
	after := s.m.clone(src)
	maps.Copy(after, add)
	stable := s.stable(nil)
	slots := 0
	for _, p := range add {
		slots += len(p.slots())
	}
	n := 1 + s.rnd.IntN(2*slots-1)
	at := s.killOn(inj, "create", []events.Action{events.ActionCreate, events.ActionStart}, ids, n, func() error { return s.set(src, after) })
	s.batches[rep] = batch{src: src, ids: ids}
	s.startHostlet()
	s.wait(inj, fmt.Sprintf("kill -9 while creating %d pods of source %s", len(ids), src), expect{from: at, syncAfter: at, stable: stable, sourcesOK: true})
}

func (s *suite) killMidRecreate(rep int, inj *injection) {
	// The pods the same repetition's kill-mid-create added, and two more.
	var ids []string
	if b, ok := s.batches[rep]; ok {
		ids = append(ids, b.ids...)
	}
	d := s.m.desired()
	others := slices.DeleteFunc(slices.Sorted(maps.Keys(d)), func(id string) bool { return slices.Contains(ids, id) })
	for _, i := range s.rnd.Perm(len(others))[:2] {
		ids = append(ids, others[i])
	}
	changes := s.regen(ids)
	stable := s.stable(setOf(ids))
	n := 1 + s.rnd.IntN(3*s.slotCount(ids)-1)
	at := s.killOn(inj, "recreate", []events.Action{events.ActionDestroy, events.ActionCreate, events.ActionStart, events.ActionRename}, ids, n, func() error {
		for _, src := range s.shuffled(slices.Sorted(maps.Keys(changes))) {
			if err := s.set(src, changes[src]); err != nil {
				return err
			}
		}
		return nil
	})
	s.startHostlet()
	s.wait(inj, fmt.Sprintf("kill -9 while recreating %v", ids), expect{from: at, syncAfter: at, stable: stable, sourcesOK: true})
}

// killBeforeLateRemoval gives three random pods a new version and kills
// hostlet on the last start of their new containers: a recreate stops the
// old container, starts the new one and removes the old one only after
// (sync's removeLate), so the kill leaves the old containers stopped
// beside their successors. The hostlet started again must remove them
// (no duplicate) and lose no pod.
func (s *suite) killBeforeLateRemoval(rep int, inj *injection) {
	d := s.m.desired()
	all := slices.Sorted(maps.Keys(d))
	var ids []string
	starts := 0
	for _, i := range s.rnd.Perm(len(all))[:min(3, len(all))] {
		ids = append(ids, all[i])
		// A new generation changes the app containers' env: the infra
		// container stays.
		starts += len(slices.DeleteFunc(d[all[i]].slots(), func(slot string) bool { return slot == "POD" }))
	}
	changes := s.regen(ids)
	stable := s.stable(setOf(ids))
	at := s.killOn(inj, "late removal", []events.Action{events.ActionStart}, ids, starts, func() error {
		for _, src := range s.shuffled(slices.Sorted(maps.Keys(changes))) {
			if err := s.set(src, changes[src]); err != nil {
				return err
			}
		}
		return nil
	})
	s.t.Logf("late removal: %d stopped containers of %v left beside their successors at the kill", s.stoppedOf(ids), ids)
	s.startHostlet()
	s.wait(inj, fmt.Sprintf("kill -9 after starting the new containers of %v, before removing the old", ids), expect{from: at, syncAfter: at, stable: stable, sourcesOK: true})
}

func (s *suite) killMidPrune(rep int, inj *injection) {
	b, ok := s.batches[rep]
	if !ok {
		// Run alone: add the pods to remove first.
		src := pick(s, sourceOrder)
		add := s.newBatch(src)
		after := s.m.clone(src)
		maps.Copy(after, add)
		if err := s.set(src, after); err != nil {
			inj.fail("add pods to prune: %v", err)
			return
		}
		if !s.wait(inj, "add pods to prune", expect{from: time.Now(), syncAfter: time.Now(), sourcesOK: true}) {
			return
		}
		b = batch{src: src, ids: slices.Sorted(maps.Keys(add))}
	}
	delete(s.batches, rep)
	n := 1 + s.rnd.IntN(2*s.slotCount(b.ids)-1)
	after := s.m.clone(b.src)
	for _, id := range b.ids {
		delete(after, id)
	}
	stable := s.stable(setOf(b.ids))
	at := s.killOn(inj, "prune", []events.Action{events.ActionDie, events.ActionDestroy}, b.ids, n, func() error { return s.set(b.src, after) })
	s.startHostlet()
	s.wait(inj, fmt.Sprintf("kill -9 while removing %d pods of source %s", len(b.ids), b.src), expect{from: at, syncAfter: at, stable: stable, sourcesOK: true})
}

func (s *suite) engineRestart(rep int, inj *injection) {
	// A change in flight, so the restart may land mid-apply.
	id := pick(s, slices.Sorted(maps.Keys(s.m.desired())))
	stable := s.stable(setOf([]string{id}))
	for src, pods := range s.regen([]string{id}) {
		if err := s.set(src, pods); err != nil {
			inj.fail("change %s: %v", id, err)
		}
	}
	time.Sleep(s.between(0, 1500*time.Millisecond))
	from := time.Now()
	if err := s.eng.restart(s.ctx); err != nil {
		s.t.Fatalf("restart the engine: %v", err)
	}
	back := time.Now()
	s.t.Logf("engine restarted in %s", back.Sub(from).Round(10*time.Millisecond))
	s.wait(inj, "engine restarted while hostlet runs", expect{from: from, syncAfter: back, stable: stable, sourcesOK: true})
}

func (s *suite) etcdDown(rep int, inj *injection) {
	down := *flagEtcdDown
	from := time.Now()
	s.etcd.Stop()
	// A change through git while etcd is down is applied all the same.
	time.Sleep(s.between(down/10, down/3))
	id := pick(s, slices.Sorted(maps.Keys(s.m.pods[srcGit])))
	stable := s.stable(setOf([]string{id}))
	changeAt := time.Now()
	if err := s.set(srcGit, s.regen([]string{id})[srcGit]); err != nil {
		inj.fail("change %s: %v", id, err)
	}
	if !s.wait(inj, "git change while etcd is down", expect{from: changeAt, syncAfter: changeAt, stable: stable, destroyedSince: from}) {
		return
	}
	if rep%2 == 1 {
		// And hostlet restarted while etcd is down: the etcd source's
		// saved set stands for it.
		time.Sleep(s.between(0, down/4))
		s.h.kill9()
		k := time.Now()
		s.startHostlet()
		if !s.wait(inj, "hostlet restarted while etcd is down", expect{from: k, syncAfter: k, stable: stable, destroyedSince: from}) {
			return
		}
	}
	if rest := time.Until(from.Add(down)); rest > 0 {
		time.Sleep(rest)
	}
	s.etcd.Restart()
	back := time.Now()
	s.t.Logf("etcd back after %s", back.Sub(from).Round(100*time.Millisecond))
	// A change through etcd once it is back.
	kv := pick(s, slices.Sorted(maps.Keys(s.m.pods[srcEtcd])))
	stable = s.stable(setOf([]string{kv}))
	if err := s.set(srcEtcd, s.regen([]string{kv})[srcEtcd]); err != nil {
		inj.fail("change %s: %v", kv, err)
	}
	s.wait(inj, "etcd back", expect{from: back, syncAfter: back, stable: stable, destroyedSince: from, sourcesOK: true})
}

func (s *suite) gitDown(rep int, inj *injection) {
	from := time.Now()
	stable := s.stable(nil)
	s.gitSrv.Stop()
	s.h.syncNow()
	time.Sleep(s.between(5*time.Second, 15*time.Second))
	now := time.Now()
	if !s.wait(inj, "git server down", expect{from: now, syncAfter: now, stable: stable, destroyedSince: from}) {
		return
	}
	// A commit made while the server is down is applied once it is back.
	id := pick(s, slices.Sorted(maps.Keys(s.m.pods[srcGit])))
	stable = s.stable(setOf([]string{id}))
	if err := s.set(srcGit, s.regen([]string{id})[srcGit]); err != nil {
		inj.fail("change %s: %v", id, err)
	}
	s.gitSrv.Start()
	back := time.Now()
	s.h.syncNow()
	s.wait(inj, "git server back", expect{from: back, syncAfter: back, stable: stable, destroyedSince: from, sourcesOK: true})
}

func (s *suite) gitForcePush(rep int, inj *injection) {
	if len(s.git.commits) < 2 {
		// Something to go back from: the same set once more.
		if err := s.set(srcGit, s.m.clone(srcGit)); err != nil {
			inj.fail("commit: %v", err)
		}
	}
	older := pick(s, s.git.commits[:len(s.git.commits)-1])
	id := pick(s, slices.Sorted(maps.Keys(s.m.pods[srcGit])))
	stable := s.stable(setOf([]string{id}))
	after := s.regen([]string{id})[srcGit]
	from := time.Now()
	s.git.forcePush(s.t, older.sha, sortedPods(after))
	s.m.pods[srcGit] = after
	s.h.syncNow()
	s.wait(inj, "history rewritten from "+older.sha[:10], expect{from: from, syncAfter: from, stable: stable, sourcesOK: true})
}

func (s *suite) gitCacheTruncated(rep int, inj *injection) {
	cache := filepath.Join(s.stateDir, "git", srcGit)
	id := pick(s, slices.Sorted(maps.Keys(s.m.pods[srcGit])))
	stable := s.stable(setOf([]string{id}))
	// Every other repetition damages the cache of a stopped hostlet, the
	// others that of a running one.
	stopped := rep%2 == 1
	if stopped {
		s.h.kill9()
	}
	var files []string
	_ = filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		inj.fail("no git cache in %s", cache)
	}
	var hit []string
	for _, i := range s.rnd.Perm(len(files))[:max(1, len(files)/3)] {
		f := files[i]
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		size := int64(0)
		if fi.Size() > 1 {
			size = s.rnd.Int64N(fi.Size())
		}
		if err := os.Truncate(f, size); err != nil {
			inj.fail("truncate %s: %v", f, err)
		}
		rel, _ := filepath.Rel(cache, f)
		hit = append(hit, fmt.Sprintf("%s %d→%d", rel, fi.Size(), size))
	}
	s.t.Logf("git cache: truncated %d of %d files: %v", len(hit), len(files), hit)
	from := time.Now()
	if stopped {
		s.startHostlet()
	}
	if err := s.set(srcGit, s.regen([]string{id})[srcGit]); err != nil {
		inj.fail("change %s: %v", id, err)
	}
	s.wait(inj, fmt.Sprintf("git cache truncated (hostlet %s)", map[bool]string{true: "stopped", false: "running"}[stopped]),
		expect{from: from, syncAfter: from, stable: stable, sourcesOK: true})
}

func (s *suite) httpFlaky(rep int, inj *injection) {
	modes := []string{"down", httpError, httpGarbage, httpCut}
	if s.httpModes == nil {
		s.httpModes = s.rnd.Perm(len(modes))
	}
	mode := modes[s.httpModes[rep%len(modes)]]
	from := time.Now()
	stable := s.stable(nil)
	if mode == "down" {
		s.web.stop()
	} else {
		garbage := make([]byte, 64+s.rnd.IntN(2048))
		for i := range garbage {
			garbage[i] = byte(s.rnd.Uint32())
		}
		s.web.setMode(mode, garbage)
	}
	s.h.syncNow()
	time.Sleep(s.between(4*time.Second, 10*time.Second))
	now := time.Now()
	if !s.wait(inj, "http source "+mode, expect{from: now, syncAfter: now, stable: stable, destroyedSince: from}) {
		return
	}
	if err := s.web.start(); err != nil {
		s.t.Fatal(err)
	}
	s.web.setMode(httpUp, nil)
	id := pick(s, slices.Sorted(maps.Keys(s.m.pods[srcHTTP])))
	stable = s.stable(setOf([]string{id}))
	back := time.Now()
	if err := s.set(srcHTTP, s.regen([]string{id})[srcHTTP]); err != nil {
		inj.fail("change %s: %v", id, err)
	}
	s.wait(inj, "http source back", expect{from: back, syncAfter: back, stable: stable, destroyedSince: from, sourcesOK: true})
}

// Ways to damage a state file.
const (
	damageTruncate   = "truncated"
	damageEmpty      = "emptied"
	damageGarbage    = "garbage"
	damageUnreadable = "unreadable"
)

// stateDamage kills hostlet, damages every state file, and starts hostlet
// again with the git and HTTP sources down: their saved sets are what it
// has. Nothing may be removed on account of a file it could not read.
func (s *suite) stateDamage(rep int, inj *injection, how string) {
	stable := s.stable(nil)
	s.h.kill9()
	from := time.Now()
	files := s.stateFiles()
	var hit []string
	for _, f := range files {
		if err := s.damage(f, how); err != nil {
			inj.fail("damage %s: %v", f, err)
		}
		rel, _ := filepath.Rel(s.stateDir, f)
		hit = append(hit, rel)
	}
	s.t.Logf("state files %s: %v", how, hit)
	s.gitSrv.Stop()
	s.web.stop()
	s.startHostlet()
	up := time.Now()
	if !s.wait(inj, "restarted on "+how+" state files, git and http down", expect{from: from, syncAfter: up, stable: stable}) {
		return
	}
	s.gitSrv.Start()
	if err := s.web.start(); err != nil {
		s.t.Fatal(err)
	}
	back := time.Now()
	s.h.syncNow()
	if !s.wait(inj, "git and http back", expect{from: back, syncAfter: back, stable: stable, destroyedSince: from, sourcesOK: true}) {
		return
	}
	// The pusher pushes its set again (the saved copy was damaged).
	again := time.Now()
	if err := s.set(srcPush, s.m.clone(srcPush)); err != nil {
		inj.fail("push again: %v", err)
	}
	s.wait(inj, "pushed again", expect{from: again, syncAfter: again, stable: stable, destroyedSince: from, sourcesOK: true})
}

func (s *suite) damage(path, how string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	switch how {
	case damageTruncate:
		size := int64(0)
		if fi.Size() > 1 {
			size = 1 + s.rnd.Int64N(fi.Size()-1)
		}
		return os.Truncate(path, size)
	case damageEmpty:
		return os.Truncate(path, 0)
	case damageGarbage:
		b := make([]byte, max(fi.Size(), 16))
		for i := range b {
			b[i] = byte(s.rnd.Uint32())
		}
		return os.WriteFile(path, b, fi.Mode().Perm())
	case damageUnreadable:
		return os.Chmod(path, 0)
	}
	return fmt.Errorf("unknown damage %q", how)
}

// fillerName is the file disk-full fills stateDir's tmpfs with.
const fillerName = ".faults-filler"

// fill writes the filler until the tmpfs has no byte left.
func (s *suite) fill() error {
	f, err := os.OpenFile(filepath.Join(s.stateDir, fillerName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4 << 10, 1} {
		buf := make([]byte, size)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					return err
				}
				break
			}
		}
	}
	return nil
}

func (s *suite) diskFull(rep int, inj *injection) {
	stable := s.stable(nil)
	from := time.Now()
	if err := s.fill(); err != nil {
		inj.fail("fill %s: %v", s.stateDir, err)
	}
	defer os.Remove(filepath.Join(s.stateDir, fillerName))
	// A push while the disk is full must not be acknowledged.
	before := s.m.clone(srcPush)
	id := s.newID(srcPush)
	after := maps.Clone(before)
	after[id] = pod{ID: id}
	err := s.push.publish(s.t, sortedPods(after))
	var refused *pushRefusedError
	switch {
	case err == nil:
		inj.fail("push answered %d on a full disk (want 5xx: it cannot have been saved)", s.push.last)
		// Acknowledged: it must not be lost.
		s.m.pods[srcPush] = after
	case errors.As(err, &refused) && refused.code >= 500:
		s.t.Logf("push on a full disk: %v", err)
	default:
		inj.fail("push on a full disk: %v (want a 5xx answer)", err)
	}
	now := time.Now()
	if !s.wait(inj, "disk full", expect{from: now, syncAfter: now, stable: stable, destroyedSince: from, syncErrorOK: true}) {
		return
	}
	// hostlet restarted while the disk is still full.
	s.h.kill9()
	k := time.Now()
	s.startHostlet()
	if !s.wait(inj, "restarted on a full disk", expect{from: k, syncAfter: k, stable: stable, destroyedSince: from, syncErrorOK: true}) {
		return
	}
	// Space freed: the same push is taken and applied.
	if err := os.Remove(filepath.Join(s.stateDir, fillerName)); err != nil {
		inj.fail("free space: %v", err)
	}
	freed := time.Now()
	if err := s.set(srcPush, after); err != nil {
		inj.fail("push once space is free: %v", err)
	}
	if !s.wait(inj, "space freed, pushed again", expect{from: freed, syncAfter: freed, stable: stable, destroyedSince: from, sourcesOK: true}) {
		return
	}
	// Back to the push set of before.
	stable = s.stable(setOf([]string{id}))
	undo := time.Now()
	if err := s.set(srcPush, before); err != nil {
		inj.fail("push the set of before: %v", err)
	}
	s.wait(inj, "pushed pod removed", expect{from: undo, syncAfter: undo, stable: stable, destroyedSince: from, sourcesOK: true})
}

func (s *suite) hostReboot(rep int, inj *injection) {
	stable := s.stable(nil)
	from := time.Now()
	// A shutdown stops hostlet (SIGTERM); every other repetition it dies
	// (kill -9) instead.
	if rep%2 == 1 {
		s.h.kill9()
	} else {
		s.h.stop()
	}
	if err := s.eng.stop(time.Minute); err != nil {
		inj.fail("stop the engine: %v", err)
	}
	// Every source unreachable after the reboot.
	s.gitSrv.Stop()
	s.web.stop()
	s.etcd.Stop()
	away := s.fileDir + ".away"
	if err := os.Rename(s.fileDir, away); err != nil {
		s.t.Fatal(err)
	}
	if err := s.eng.start(s.ctx); err != nil {
		s.t.Fatalf("start the engine: %v", err)
	}
	engUp := time.Now()
	s.startHostlet()
	up := time.Now()
	if !s.wait(inj, "rebooted with every source unreachable", expect{from: engUp, syncAfter: up, stable: stable, destroyedSince: from}) {
		return
	}
	// The sources come back.
	s.etcd.Restart()
	s.gitSrv.Start()
	if err := s.web.start(); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Rename(away, s.fileDir); err != nil {
		s.t.Fatal(err)
	}
	back := time.Now()
	s.h.syncNow()
	s.wait(inj, "sources back after the reboot", expect{from: back, syncAfter: back, stable: stable, destroyedSince: from, sourcesOK: true})
}

// regen returns, by source, the sets in which the pods ids have a new
// version.
func (s *suite) regen(ids []string) map[string]map[string]pod {
	out := map[string]map[string]pod{}
	for _, src := range s.m.order {
		for _, id := range ids {
			p, ok := s.m.pods[src][id]
			if !ok {
				continue
			}
			if out[src] == nil {
				out[src] = s.m.clone(src)
			}
			p.Gen++
			out[src][id] = p
		}
	}
	return out
}

func (s *suite) shuffled(xs []string) []string {
	out := slices.Clone(xs)
	s.rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func setOf(ids []string) map[string]bool {
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// recover brings everything back after a failed injection, so the next
// ones start from a converged host: every source up and republished,
// hostlet restarted. If that does not converge, an operator steps in:
// first every container of the instance that is not running is removed
// (docker rm -f; hostlet makes them again), then hostlet's stateDir is
// wiped as well (a new host adopting the running pods).
func (s *suite) recover(after string) {
	s.t.Helper()
	s.t.Logf("recovering after %s", after)
	for attempt := 0; attempt < 3; attempt++ {
		s.h.kill9()
		_ = os.Remove(filepath.Join(s.stateDir, fillerName))
		if !s.eng.running() {
			if err := s.eng.start(s.ctx); err != nil {
				s.t.Fatalf("recover: start the engine: %v", err)
			}
		}
		s.gitSrv.Start()
		if err := s.web.start(); err != nil {
			s.t.Fatal(err)
		}
		s.web.setMode(httpUp, nil)
		s.etcd.Restart()
		if _, err := os.Stat(s.fileDir + ".away"); err == nil {
			_ = os.Rename(s.fileDir+".away", s.fileDir)
		}
		if attempt >= 1 {
			s.removeStopped()
		}
		if attempt == 2 {
			entries, _ := os.ReadDir(s.stateDir)
			for _, e := range entries {
				_ = os.RemoveAll(filepath.Join(s.stateDir, e.Name()))
			}
			s.t.Logf("recover: stateDir wiped")
		}
		s.startHostlet()
		for _, src := range s.m.order {
			if err := s.set(src, s.m.clone(src)); err != nil {
				s.t.Logf("recover: %v", err)
			}
		}
		inj := newInjection("recover")
		now := time.Now()
		s.wait(inj, "recover", expect{from: now, syncAfter: now, sourcesOK: true})
		if inj.ok() {
			return
		}
		s.t.Logf("recover attempt %d: %v", attempt+1, inj.failures)
	}
	s.t.Fatalf("could not bring hostlet back after %s; the run stops here", after)
}

// stoppedOf counts the containers of the pods ids that are not running.
func (s *suite) stoppedOf(ids []string) int {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	list, err := s.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+s.instance))})
	if err != nil {
		s.t.Logf("list containers: %v", err)
		return -1
	}
	n := 0
	for _, c := range list {
		if c.State != hruntime.StateRunning && slices.Contains(ids, c.Labels[hruntime.LabelPod]) {
			n++
		}
	}
	return n
}

// removeStopped force-removes every container of the instance that is not
// running, saying what the engine reports of each.
func (s *suite) removeStopped() {
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	list, err := s.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+s.instance))})
	if err != nil {
		s.t.Logf("recover: list containers: %v", err)
		return
	}
	for _, c := range list {
		if c.State == hruntime.StateRunning {
			continue
		}
		what := fmt.Sprintf("%s/%s %s (%s)", c.Labels[hruntime.LabelPod], c.Labels[hruntime.LabelContainer], c.ID[:12], c.Status)
		if info, err := s.cli.ContainerInspect(ctx, c.ID); err == nil && info.State != nil {
			what += fmt.Sprintf(" state=%s pid=%d exit=%d error=%q", info.State.Status, info.State.Pid, info.State.ExitCode, info.State.Error)
		}
		err := s.cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		s.t.Logf("recover: docker rm -f %s: %v", what, err)
	}
}
