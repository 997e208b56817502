package rollouts

import (
	"fmt"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/validate"
)

// TestSavesEncodeOutsideTheLockWithoutARace: Save encodes its snapshot
// outside the store's lock (a kept version's files can be megabytes, and
// /status waits on that lock), so what a snapshot shares with the live
// records (kept versions, holds, held back versions) must be replaced,
// never changed in place. Saves, status reads and kept-version reads run
// while the sync advances rollouts through completions, rollbacks, holds
// and releases; the race detector (make test) fails on any write in place.
func TestSavesEncodeOutsideTheLockWithoutARace(t *testing.T) {
	s := Load(t.TempDir(), nil, nil, nil)
	var wg gosync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.Save()
				_ = s.Shown("web")
				_ = s.GoodPods()
			}
		})
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hashOf := func(p podspec.Pod) string { return manifest.PodHash(p.Manifest) }
	for i := range 400 {
		m := manifest.Manifest{Version: manifest.Version, ID: "web", Labels: map[string]string{"a": "b"},
			Containers: []manifest.Container{{Name: "app", Image: fmt.Sprintf("img:%d", (i/4)%5), Env: []manifest.EnvVar{{Name: "A", Value: "x"}}}}}
		p := podspec.Pod{Manifest: m, Source: "s", Revision: fmt.Sprint(i)}
		now := t0.Add(time.Duration(i) * time.Minute)
		fail := i%4 == 3 && (i/4)%3 == 1
		s.Effective([]podspec.Pod{p}, hashOf, validate.Options{})
		s.Advance(Seen{Now: now, Declared: []podspec.Pod{p}, Hashes: map[string]string{}, Ready: true, Present: func(string) bool { return true },
			Observe: func(p podspec.Pod, hash string, _ *manifest.Manifest) Observation {
				o := Observation{Now: now, Pod: p, Hash: hash, Revision: p.Revision, Policy: manifest.RollbackAuto, Deadline: time.Hour, Applied: true, Ready: !fail}
				if fail {
					o.Failure = "crashed"
				}
				return o
			}})
		switch i % 29 {
		case 0:
			s.Hold("web", "alice", fmt.Sprint("migration ", i), now)
		case 13:
			s.Release("web")
		}
		s.Save()
	}
	close(stop)
	wg.Wait()
	if s.Rollbacks()["web"] == 0 {
		t.Error("no rollback happened: the test no longer goes through one")
	}
}
