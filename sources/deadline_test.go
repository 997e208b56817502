package sources

import (
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// checkerFunc is a validate.Checker.
type checkerFunc func(manifest.Sourced, validate.Options) error

func (f checkerFunc) Check(s manifest.Sourced, opts validate.Options) error { return f(s, opts) }

// useChecker makes check what m's memo checks a manifest with when it
// does not remember it.
func useChecker(m *Merger, check checkerFunc) {
	m.memo = validate.NewMemo(check)
	m.opts.Validate.Checker = m.memo
}

// applyWithin applies u and fails the test when Apply takes longer than d.
func applyWithin(t *testing.T, m *Merger, u Update, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Apply(u)
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("applying the update of source %s did not return within %s", u.Source, d)
	}
}

// TestSlowValidationOfOneSourceLeavesTheOthersApplying (issue 30): the
// checks of one source's update, however long they take, cannot stop
// another source's updates from applying. Past the deadline the update is
// refused (the source keeps its last good set, its error says why) and
// Overdue names it until the checks end; meanwhile the other source's
// update applies, without its merge checking the slow source's fields.
// Once the checks end, the same update is taken.
func TestSlowValidationOfOneSourceLeavesTheOthersApplying(t *testing.T) {
	const deadline = 200 * time.Millisecond
	m := newMerger(t, MergeOptions{ValidateDeadline: deadline}, "slow", "fast")
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	useChecker(m, func(s manifest.Sourced, opts validate.Options) error {
		if s.Origin.Source == "slow" {
			<-release
		}
		return validate.Manifest(s, opts)
	})
	slow := Update{Source: "slow", Revision: "s1", Manifests: decoded(t, "slow", podYAML("s", "1"))}
	applyWithin(t, m, slow, 10*deadline)
	st := m.State()
	if !strings.Contains(st.Sources[0].Error, "took more than 200ms") || len(st.Accepted) != 0 {
		t.Fatalf("source error %q, accepted %v; want the deadline named and nothing taken", st.Sources[0].Error, accepted(st))
	}
	if o := m.Overdue(); len(o) != 1 || !strings.Contains(o[0], "source slow") {
		t.Fatalf("Overdue() = %q, want source slow", o)
	}

	applyWithin(t, m, Update{Source: "fast", Revision: "f1", Manifests: decoded(t, "fast", podYAML("f", "1"))}, 10*deadline)
	if got := accepted(m.State()); !slices.Equal(got, []string{"f=1@f1"}) {
		t.Fatalf("accepted %v, want the fast source's pod", got)
	}

	close(release)
	testkit.WaitFor(t, 10*time.Second, func() (bool, string) {
		o := m.Overdue()
		return len(o) == 0, strings.Join(o, "; ")
	})
	applyWithin(t, m, slow, 10*deadline)
	if got := accepted(m.State()); !slices.Equal(got, []string{"s=1@s1", "f=1@f1"}) {
		t.Fatalf("accepted %v after the checks ended, want both pods", got)
	}
	if e := m.State().Sources[0].Error; e != "" {
		t.Errorf("source error %q after the update was taken", e)
	}
}

// TestMergeChecksEachManifestOnce: a source's manifests are checked when
// it delivers them, not again when another source's update is merged (a
// check of source a that would block after its set is taken would stop
// every merge).
func TestMergeChecksEachManifestOnce(t *testing.T) {
	m := newMerger(t, MergeOptions{}, "a", "b")
	var mu gosync.Mutex
	checks := map[string]int{}
	taken := false
	useChecker(m, func(s manifest.Sourced, opts validate.Options) error {
		mu.Lock()
		defer mu.Unlock()
		err := validate.Manifest(s, opts)
		if taken && s.Origin.Source == "a" {
			t.Errorf("manifest %s of source a checked again", s.Manifest.ID)
		}
		checks[s.Origin.Source]++
		return err
	})
	applyWithin(t, m, Update{Source: "a", Revision: "a1", Manifests: decoded(t, "a", podYAML("p1", "1"), podYAML("p2", "1"))}, 10*time.Second)
	mu.Lock()
	taken = true
	mu.Unlock()
	for i := range 5 {
		v := string(rune('1' + i))
		applyWithin(t, m, Update{Source: "b", Revision: "b" + v, Manifests: decoded(t, "b", podYAML("p3", v))}, 10*time.Second)
	}
	if got := accepted(m.State()); len(got) != 3 {
		t.Fatalf("accepted %v, want 3 pods", got)
	}
	if checks["a"] != 2 || checks["b"] != 5 {
		t.Errorf("checks by source %v, want a: 2 and b: 5 (each version of each manifest once)", checks)
	}
}

// TestOverdueSourceKeepsOneCheckInFlight (issue 30 attack, finding 8):
// every update of a source whose checks never end started another
// checking goroutine, without limit. While one check of a source runs past
// its deadline, the source's further updates are refused at once with the
// same error and start no check; when the stuck check ends, the source's
// latest update is handed back (Retries) and checked again.
func TestOverdueSourceKeepsOneCheckInFlight(t *testing.T) {
	const deadline = 200 * time.Millisecond
	m := newMerger(t, MergeOptions{ValidateDeadline: deadline}, "slow", "fast")
	release := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	var mu gosync.Mutex
	slowChecks := 0
	useChecker(m, func(s manifest.Sourced, opts validate.Options) error {
		if s.Origin.Source == "slow" {
			mu.Lock()
			slowChecks++
			mu.Unlock()
			<-release
		}
		return validate.Manifest(s, opts)
	})
	applyWithin(t, m, Update{Source: "slow", Revision: "s0", Manifests: decoded(t, "slow", podYAML("s", "0"))}, 10*deadline)
	for i := 1; i <= 5; i++ {
		v := string(rune('0' + i))
		u := Update{Source: "slow", Revision: "s" + v, Manifests: decoded(t, "slow", podYAML("s", v))}
		start := time.Now()
		applyWithin(t, m, u, 10*deadline)
		if d := time.Since(start); d >= deadline {
			t.Errorf("update %d of the overdue source took %s, want it refused at once", i, d)
		}
		if e := m.State().Sources[0].Error; !strings.Contains(e, "took more than 200ms") {
			t.Errorf("update %d: source error %q, want the deadline named", i, e)
		}
	}
	mu.Lock()
	n := slowChecks
	mu.Unlock()
	if n != 1 {
		t.Errorf("%d checks of the overdue source started, want 1 in flight", n)
	}
	applyWithin(t, m, Update{Source: "fast", Revision: "f1", Manifests: decoded(t, "fast", podYAML("f", "1"))}, 10*deadline)

	close(release)
	var retry Update
	select {
	case retry = <-m.Retries():
	case <-time.After(10 * time.Second):
		t.Fatal("no retry of the source after its stuck check ended")
	}
	if retry.Source != "slow" || retry.Revision != "s5" || retry.Reply != nil {
		t.Fatalf("retry of %s@%s (reply %v), want the latest update slow@s5 without a reply", retry.Source, retry.Revision, retry.Reply != nil)
	}
	applyWithin(t, m, retry, 10*time.Second)
	if got := accepted(m.State()); !slices.Equal(got, []string{"s=5@s5", "f=1@f1"}) {
		t.Fatalf("accepted %v after the retry, want the latest slow pod and the fast one", got)
	}
	if len(m.Overdue()) != 0 {
		t.Errorf("Overdue() = %q after the retry", m.Overdue())
	}
}
