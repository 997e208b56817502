package sources

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/validate"
)

// damages are the ways a saved set gets damaged (testkit.Damages: by a
// crash, a bad disk, an operator), and sets that decode but are not this
// source's or not whole.
func damages() []testkit.Damage {
	return append(testkit.Damages(),
		testkit.Damage{Name: "null", Do: func(t testing.TB, path string) { testkit.WriteFile(t, path, "null") }},
		testkit.Damage{Name: "another source's set", Do: func(t testing.TB, path string) {
			testkit.WriteFile(t, path, `{"name":"other","manifests":[]}`)
		}},
		testkit.Damage{Name: "manifest without id", Do: func(t testing.TB, path string) {
			testkit.WriteFile(t, path, `{"name":"push","revision":"p1","manifests":[{"Manifest":{"version":"v1beta1"}}]}`)
		}},
	)
}

// applyReply applies u with a Reply and returns the answer.
func applyReply(m *Merger, u Update) (bool, Applied) {
	reply := make(chan Applied, 1)
	u.Reply = reply
	changed := m.Apply(u)
	select {
	case a := <-reply:
		return changed, a
	default:
		return changed, Applied{Err: errors.New("no reply")}
	}
}

// TestMergerDamagedSavedSet: a saved set that cannot be read or decoded
// does not stop hostlet and does not count as the source's set: the source
// is not delivered (MarkDelivered does not change that), so the merge is
// not ready and nothing is pruned; the damaged copy is kept beside it, the
// problem is in the source's notice and in Problems. A fresh set clears
// the notice.
func TestMergerDamagedSavedSet(t *testing.T) {
	for _, d := range damages() {
		t.Run(d.Name, func(t *testing.T) {
			dir := t.TempDir()
			m := newMerger(t, MergeOptions{StateDir: dir}, "local", "push")
			m.Apply(Update{Source: "local", Revision: "l1", Manifests: decoded(t, "local", podYAML("web", "1"))})
			if _, a := applyReply(m, Update{Source: "push", Revision: "p1", Manifests: decoded(t, "push", podYAML("pushed", "1"))}); a.Err != nil {
				t.Fatal(a.Err)
			}
			path := filepath.Join(dir, "sources", "push.json")
			d.Do(t, path)

			var problems atomicfile.Problems
			m2 := newMerger(t, MergeOptions{StateDir: dir, Problems: &problems}, "local", "push")
			m2.MarkDelivered("push")
			st := m2.State()
			if st.Ready {
				t.Error("ready although push's saved set could not be loaded: its pods would be pruned")
			}
			wantList(t, "accepted", accepted(st), []string{"web=1@l1"})
			push := st.Sources[1]
			if push.Delivered || push.Error != "" || !strings.HasPrefix(push.Notice, "saved set unreadable: ") || !strings.Contains(push.Notice, "(kept as sources/push.json.corrupt-") || !strings.HasSuffix(push.Notice, "; "+NoticeWaiting) {
				t.Errorf("push status %+v: want not delivered, no source error, a notice naming the kept copy and that pruning waits", push)
			}
			if !st.Sources[0].Delivered || st.Sources[0].Notice != "" {
				t.Errorf("local status %+v: want delivered, no notice", st.Sources[0])
			}
			list := problems.List()
			if len(list) != 1 || list[0].File != "sources/push.json" || list[0].Op != atomicfile.OpRead || !strings.HasPrefix(list[0].KeptAs, "sources/push.json.corrupt-") {
				t.Fatalf("problems %+v, want one read problem of sources/push.json with its copy", list)
			}
			if _, err := os.Lstat(filepath.Join(dir, list[0].KeptAs)); err != nil {
				t.Errorf("damaged copy: %v", err)
			}
			if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the damaged file is still in place: %v", err)
			}
			if c := problems.Counts()["sources/push.json"]; c != 1 {
				t.Errorf("count %d, want 1", c)
			}

			// A fresh push: delivered, ready, saved, the problem gone.
			if _, a := applyReply(m2, Update{Source: "push", Revision: "p2", Manifests: decoded(t, "push", podYAML("pushed", "2"))}); a.Err != nil {
				t.Fatal(a.Err)
			}
			st = m2.State()
			if !st.Ready || st.Sources[1].Error != "" || !st.Sources[1].Delivered || st.Sources[1].Notice != "" {
				t.Errorf("after a fresh push: ready %v, push %+v", st.Ready, st.Sources[1])
			}
			if l := problems.List(); len(l) != 1 || l[0].Op != atomicfile.OpRead {
				t.Errorf("problems after a good save %+v, want only the read problem (its copy is kept)", l)
			}
			m3 := newMerger(t, MergeOptions{StateDir: dir}, "local", "push")
			wantList(t, "accepted after a restart", accepted(m3.State()), []string{"web=1@l1", "pushed=2@p2"})
		})
	}
}

// TestMergerPushNotSaved: an update with a Reply whose set cannot be saved
// (a full disk, or any write error) is refused with ErrNotSaved and not
// applied: the set before stays in effect and on disk, the problem is in
// Problems. Once the disk has room the same push is taken.
func TestMergerPushNotSaved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	testkit.MountTmpfs(t, dir, 64<<10)
	var problems atomicfile.Problems
	m := newMerger(t, MergeOptions{StateDir: dir, Problems: &problems}, "local", "push")
	m.Apply(Update{Source: "local", Revision: "l1", Manifests: decoded(t, "local", podYAML("web", "1"))})
	if _, a := applyReply(m, Update{Source: "push", Revision: "p1", Manifests: decoded(t, "push", podYAML("one", "1"))}); a.Err != nil {
		t.Fatal(a.Err)
	}
	free := testkit.FillDisk(t, dir)

	changed, a := applyReply(m, Update{Source: "push", Revision: "p2", Manifests: decoded(t, "push", podYAML("two", "2"))})
	if !errors.Is(a.Err, ErrNotSaved) || !IsNoSpace(a.Err) || changed {
		t.Fatalf("push on a full disk: changed %v, %v; want ErrNotSaved (no space), no change", changed, a.Err)
	}
	st := m.State()
	wantList(t, "accepted after the refused push", accepted(st), []string{"web=1@l1", "one=1@p1"})
	if s := st.Sources[1]; s.Revision != "p1" || s.Error != "" || !s.Delivered {
		t.Errorf("push status after the refused push %+v, want revision p1, no error", s)
	}
	if l := problems.List(); len(l) != 1 || l[0].File != "sources/push.json" || l[0].Op != atomicfile.OpWrite {
		t.Errorf("problems %+v, want the failed write of sources/push.json", l)
	}
	// After a restart (the disk still full) the set before is what runs.
	wantList(t, "accepted after a restart", accepted(newMerger(t, MergeOptions{StateDir: dir}, "local", "push").State()), []string{"web=1@l1", "one=1@p1"})

	free()
	if _, a := applyReply(m, Update{Source: "push", Revision: "p2", Manifests: decoded(t, "push", podYAML("two", "2"))}); a.Err != nil {
		t.Fatalf("push with room again: %v", a.Err)
	}
	wantList(t, "accepted once saved", accepted(m.State()), []string{"web=1@l1", "two=2@p2"})
	if l := problems.List(); len(l) != 0 {
		t.Errorf("problems after a good save %+v, want none", l)
	}
	if c := problems.Counts()["sources/push.json"]; c != 1 {
		t.Errorf("count %d, want 1", c)
	}

	// Another write error (sources/ replaced by a file) is ErrNotSaved too,
	// not a full disk.
	if err := os.RemoveAll(filepath.Join(dir, "sources")); err != nil {
		t.Fatal(err)
	}
	testkit.WriteFile(t, filepath.Join(dir, "sources"), "")
	if _, a := applyReply(m, Update{Source: "push", Revision: "p3", Manifests: decoded(t, "push", podYAML("three", "3"))}); !errors.Is(a.Err, ErrNotSaved) || IsNoSpace(a.Err) {
		t.Errorf("push with sources/ a file: %v, want ErrNotSaved, not no space", a.Err)
	}
	wantList(t, "accepted after the second refused push", accepted(m.State()), []string{"web=1@l1", "two=2@p2"})
}

// TestMergerOtherSourceNotSaved: a source that re-reads (file, git, http,
// etcd) keeps its new set in effect when it cannot be saved, and its
// outdated saved set is removed: after a restart it counts as not
// delivered instead of delivering a set it no longer holds.
func TestMergerOtherSourceNotSaved(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	testkit.MountTmpfs(t, dir, 64<<10)
	var problems atomicfile.Problems
	m := newMerger(t, MergeOptions{StateDir: dir, Problems: &problems}, "local")
	m.Apply(Update{Source: "local", Revision: "l1", Manifests: decoded(t, "local", podYAML("old", "1"))})
	free := testkit.FillDisk(t, dir)
	defer free()
	if !m.Apply(Update{Source: "local", Revision: "l2", Manifests: decoded(t, "local", podYAML("new", "2"))}) {
		t.Error("the new set was not taken")
	}
	wantList(t, "accepted", accepted(m.State()), []string{"new=2@l2"})
	if l := problems.List(); len(l) != 1 || l[0].Op != atomicfile.OpWrite {
		t.Errorf("problems %+v, want the failed write", l)
	}
	m2 := newMerger(t, MergeOptions{StateDir: dir}, "local")
	if st := m2.State(); st.Ready || len(st.Accepted) != 0 {
		t.Errorf("after a restart: ready %v, accepted %v; want not delivered, nothing from the outdated set", st.Ready, accepted(st))
	}
}

// TestMergerReplyRejected: the answer to a push lists what the merge
// turned down (a duplicate id of an earlier source, a host port another
// source holds) as rejected, not accepted.
func TestMergerReplyRejected(t *testing.T) {
	m := newMerger(t, MergeOptions{}, "local", "push")
	m.Apply(Update{Source: "local", Revision: "l1", Manifests: decoded(t, "local", podYAML("web", "local"), portPodYAML("proxy", "local", 8080))})
	_, a := applyReply(m, Update{Source: "push", Revision: "p1", Manifests: decoded(t, "push", podYAML("web", "pushed"), portPodYAML("edge", "pushed", 8080), podYAML("api", "pushed"))})
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	wantList(t, "accepted", a.Accepted, []string{"api"})
	var got []string
	for _, rj := range a.Rejected {
		got = append(got, rj.ID+": "+strings.Join(rj.Reasons, "; "))
	}
	slices.Sort(got)
	if len(got) != 2 || !strings.HasPrefix(got[0], "edge: ") || !strings.Contains(got[0], "8080") || !strings.HasPrefix(got[1], "web: ") || !strings.Contains(got[1], "duplicate id") {
		t.Errorf("rejected %q, want edge (host port 8080) and web (duplicate id)", got)
	}
}

// TestMergerNotDeliveredNotice: /status shows a source that has not
// delivered, and that pruning waits for it.
func TestMergerNotDeliveredNotice(t *testing.T) {
	m := newMerger(t, MergeOptions{}, "a", "b")
	m.Apply(Update{Source: "a", Revision: "a1", Manifests: decoded(t, "a", podYAML("x", "1"))})
	m.Apply(Update{Source: "b", Err: errors.New("connection refused")})
	st := m.State()
	if a, b := st.Sources[0], st.Sources[1]; !a.Delivered || a.Notice != "" || b.Delivered || b.Notice != NoticeWaiting || !strings.Contains(b.Notice, "no pod is removed") {
		t.Errorf("sources %+v, want a delivered, b not with the waiting notice", st.Sources)
	}
	m.Apply(Update{Source: "b", Revision: "b1"})
	if b := m.State().Sources[1]; !b.Delivered || b.Notice != "" {
		t.Errorf("b after delivering %+v", b)
	}
}

// TestPushHandlerAnswersFromMerge: POST /manifests answers what the merge
// made of the push: 200 with the rejected ones listed apart, 507 on a full
// stateDir (nothing applied), 409 for an empty set the merge refuses.
func TestPushHandlerAnswersFromMerge(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	testkit.MountTmpfs(t, dir, 64<<10)
	local := filepath.Join(t.TempDir(), "local")
	testkit.WriteFile(t, filepath.Join(local, "web.yaml"), podYAML("web", "local"))
	p := NewPush(config.Source{Name: "push", Type: config.TypePush}, validate.Options{}, testLogger(t))
	srv := httptest.NewServer(p.Handler(func(*http.Request) bool { return true }))
	t.Cleanup(srv.Close)
	h := startSources(t, MergeOptions{StateDir: dir}, NewFile(config.Source{Name: "local", Type: config.TypeFile, Path: local, Interval: time.Hour}, testLogger(t)), p)
	h.waitSet(t, 5*time.Second, []string{"web=local"}, "")

	r := post(t, srv.URL, "", strings.NewReader(podListYAML("1", "web", "api")))
	if r.code != 200 || !slices.Equal(r.body.Accepted, []string{"api"}) || len(r.body.Rejected) != 1 || r.body.Rejected[0].ID != "web" {
		t.Errorf("push of a duplicate: %d %+v, want 200 accepting api, rejecting web", r.code, r.body)
	}

	free := testkit.FillDisk(t, dir)
	r = post(t, srv.URL, "", strings.NewReader(podListYAML("2", "db")))
	if r.code != http.StatusInsufficientStorage || !strings.Contains(r.body.Error, "no space") || len(r.body.Accepted) != 0 {
		t.Errorf("push on a full disk: %d %+v, want 507", r.code, r.body)
	}
	if got := ids(h.m.State()); !slices.Equal(got, []string{"web=local", "api=1"}) {
		t.Errorf("set after the refused push %v, want the set before", got)
	}
	free()

	r = post(t, srv.URL, "", strings.NewReader("[]"))
	if r.code != http.StatusConflict || !strings.Contains(r.body.Error, "holds no manifests") {
		t.Errorf("push of [] without allowEmpty: %d %+v, want 409", r.code, r.body)
	}
}
