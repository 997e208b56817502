package sources

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/manifest"
)

// decoded decodes YAML documents as source src would deliver them.
func decoded(t *testing.T, src string, docs ...string) []manifest.Sourced {
	t.Helper()
	var out []manifest.Sourced
	for i, d := range docs {
		ms, err := manifest.Decode([]byte(d), manifest.Origin{Source: src, File: fmt.Sprintf("%02d.yaml", i)})
		if err != nil {
			t.Fatalf("decode %q: %v", d, err)
		}
		out = append(out, ms...)
	}
	return out
}

func newMerger(t *testing.T, opts MergeOptions, names ...string) *Merger {
	t.Helper()
	var infos []SourceInfo
	for _, n := range names {
		infos = append(infos, SourceInfo{Name: n, Type: "file"})
	}
	m, err := NewMerger(infos, opts, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// accepted lists id=v@revision of every accepted manifest, in order.
func accepted(st State) []string {
	var out []string
	for _, e := range st.Accepted {
		out = append(out, fmt.Sprintf("%s=%s@%s", e.Manifest.ID, e.Manifest.Labels["v"], e.Revision))
	}
	return out
}

func rejected(st State) []string {
	var out []string
	for _, r := range st.Rejected {
		out = append(out, r.Source+"/"+r.ID)
	}
	return out
}

func wantList(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: %q, want %q", what, got, want)
	}
}

// TestMergerKeepsPreviousGoodVersion: a rejected new version of a manifest
// (invalid, or losing a host-port conflict) never replaces the version
// accepted before: that one stays accepted with its old revision, and the
// rejection is reported.
func TestMergerKeepsPreviousGoodVersion(t *testing.T) {
	tests := []struct {
		name string
		// first and second are the two sets of source "local"; other is
		// the set of source "etcd", earlier in config order.
		other         []string
		first, second []string
		wantAccepted  []string
		wantRejected  []string
		reasonLike    string
	}{
		{
			name:         "invalid new version",
			first:        []string{podYAML("web", "1"), podYAML("api", "1")},
			second:       []string{invalidPodYAML("web"), podYAML("api", "2")},
			wantAccepted: []string{"web=1@r1", "api=2@r2"},
			wantRejected: []string{"local/web"},
			reasonLike:   "containers[0].name",
		},
		{
			name:         "new version with an unknown field",
			first:        []string{podYAML("web", "1")},
			second:       []string{strings.Replace(podYAML("web", "2"), "image:", "imagee:", 1)},
			wantAccepted: []string{"web=1@r1"},
			wantRejected: []string{"local/web"},
			reasonLike:   "imagee",
		},
		{
			name:         "new version loses a host-port conflict",
			other:        []string{portPodYAML("proxy", "1", 8080)},
			first:        []string{portPodYAML("web", "1", 9090)},
			second:       []string{portPodYAML("web", "2", 8080)},
			wantAccepted: []string{"proxy=1@e1", "web=1@r1"},
			wantRejected: []string{"local/web"},
			reasonLike:   "already bound by pod proxy",
		},
		{
			name:         "first version invalid: nothing to keep",
			first:        []string{podYAML("api", "1")},
			second:       []string{invalidPodYAML("web"), podYAML("api", "1")},
			wantAccepted: []string{"api=1@r2"},
			wantRejected: []string{"local/web"},
			reasonLike:   "containerPort",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMerger(t, MergeOptions{}, "etcd", "local")
			m.Apply(Update{Source: "etcd", Revision: "e1", Manifests: decoded(t, "etcd", tt.other...)})
			m.Apply(Update{Source: "local", Revision: "r1", Manifests: decoded(t, "local", tt.first...)})
			if st := m.State(); len(st.Rejected) != 0 {
				t.Fatalf("first set rejected: %+v", st.Rejected)
			}
			if !m.Apply(Update{Source: "local", Revision: "r2", Manifests: decoded(t, "local", tt.second...)}) {
				t.Error("Apply of a new revision reported no change")
			}
			st := m.State()
			wantList(t, "accepted", accepted(st), tt.wantAccepted)
			wantList(t, "rejected", rejected(st), tt.wantRejected)
			if len(st.Rejected) > 0 && !strings.Contains(strings.Join(st.Rejected[0].Reasons, "; "), tt.reasonLike) {
				t.Errorf("reasons %q do not mention %q", st.Rejected[0].Reasons, tt.reasonLike)
			}
			if s := st.Sources[1]; s.Revision != "r2" || s.Error != "" || s.Manifests != len(decoded(t, "local", tt.second...)) {
				t.Errorf("source status %+v, want revision r2, no error, every decoded manifest counted", s)
			}
		})
	}
}

// TestMergerPreviousVersionSurvivesRestart: the last good version is
// persisted with the set, so it is still applied after a restart.
func TestMergerPreviousVersionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	m := newMerger(t, MergeOptions{StateDir: dir}, "local")
	m.Apply(Update{Source: "local", Revision: "r1", Manifests: decoded(t, "local", podYAML("web", "1"))})
	m.Apply(Update{Source: "local", Revision: "r2", Manifests: decoded(t, "local", invalidPodYAML("web"))})
	m2 := newMerger(t, MergeOptions{StateDir: dir}, "local")
	st := m2.State()
	wantList(t, "accepted after reload", accepted(st), []string{"web=1@r1"})
	wantList(t, "rejected after reload", rejected(st), []string{"local/web"})
}

// TestMergerEmptySet: an empty set from a source that held manifests is an
// error (the last good set stays) unless AllowEmpty; an empty first set is
// a set like any other.
func TestMergerEmptySet(t *testing.T) {
	tests := []struct {
		name       string
		allowEmpty bool
		held       bool
		wantErr    bool
		want       []string
	}{
		{name: "held manifests, guard on", held: true, wantErr: true, want: []string{"web=1@r1"}},
		{name: "held manifests, allowEmpty", held: true, allowEmpty: true, want: nil},
		{name: "first set empty", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMerger(t, MergeOptions{AllowEmpty: tt.allowEmpty}, "local")
			if tt.held {
				m.Apply(Update{Source: "local", Revision: "r1", Manifests: decoded(t, "local", podYAML("web", "1"))})
			}
			m.Apply(Update{Source: "local", Revision: "r2"})
			st := m.State()
			wantList(t, "accepted", accepted(st), tt.want)
			if !st.Ready {
				t.Error("not ready")
			}
			s := st.Sources[0]
			if tt.wantErr {
				if !strings.Contains(s.Error, ErrEmpty.Error()) || s.Revision != "r1" {
					t.Errorf("source %+v, want the empty-set error and revision r1", s)
				}
				return
			}
			if s.Error != "" || s.Revision != "r2" {
				t.Errorf("source %+v, want no error at r2", s)
			}
		})
	}
}

// TestMergerReady: Ready is false until every source delivered a set; an
// error is no delivery; a persisted set is one.
func TestMergerReady(t *testing.T) {
	dir := t.TempDir()
	m := newMerger(t, MergeOptions{StateDir: dir}, "a", "b", "c", "push")
	steps := []struct {
		u     Update
		mark  string
		ready bool
	}{
		{u: Update{Source: "b", Revision: "b1", Manifests: decoded(t, "b", podYAML("bee", "1"))}},
		{u: Update{Source: "a", Err: errors.New("connection refused")}},
		{u: Update{Source: "c", Revision: "c1"}},
		{mark: "push"},
		{u: Update{Source: "a", Err: errors.New("still refused")}},
		{u: Update{Source: "a", Revision: "a1", Manifests: decoded(t, "a", podYAML("ay", "1"))}, ready: true},
		{u: Update{Source: "b", Err: errors.New("broken again")}, ready: true},
	}
	if m.State().Ready {
		t.Fatal("ready before any source delivered")
	}
	for i, s := range steps {
		if s.mark != "" {
			m.MarkDelivered(s.mark)
		} else {
			m.Apply(s.u)
		}
		if got := m.State().Ready; got != s.ready {
			t.Fatalf("step %d: ready %v, want %v", i, got, s.ready)
		}
	}

	// A restarted merger: a, b and c have persisted sets and count as
	// delivered; push persisted nothing and waits for MarkDelivered.
	m2 := newMerger(t, MergeOptions{StateDir: dir}, "a", "b", "c", "push")
	st := m2.State()
	wantList(t, "accepted after reload", accepted(st), []string{"ay=1@a1", "bee=1@b1"})
	if st.Ready {
		t.Error("ready after reload although push never delivered")
	}
	for i, want := range []string{"a1", "b1", "c1", ""} {
		if got := st.Sources[i].Revision; got != want {
			t.Errorf("source %s revision after reload %q, want %q", st.Sources[i].Name, got, want)
		}
	}
	m2.MarkDelivered("push")
	if !m2.State().Ready {
		t.Error("not ready after reload and MarkDelivered")
	}
	// The same revision again is no change.
	if m2.Apply(Update{Source: "a", Revision: "a1", Manifests: decoded(t, "a", podYAML("ay", "1"))}) {
		t.Error("the persisted revision delivered again counted as a change")
	}

	// A damaged state file is ignored: that source waits for a fresh read.
	if err := os.WriteFile(filepath.Join(dir, "sources", "b.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	m3 := newMerger(t, MergeOptions{StateDir: dir}, "a", "b", "c")
	st = m3.State()
	if st.Ready || st.Sources[1].Revision != "" {
		t.Errorf("damaged state of b: ready %v, b revision %q; want not ready, nothing loaded", st.Ready, st.Sources[1].Revision)
	}
}

// TestMergerDuplicateIDDeterministic: the same ID declared by a file source
// and a later etcd source: the file source's runs, the etcd source's is
// rejected, in every run whatever the order updates arrive in.
func TestMergerDuplicateIDDeterministic(t *testing.T) {
	var first State
	for run := range 20 {
		m, err := NewMerger([]SourceInfo{{Name: "local", Type: "file"}, {Name: "registry", Type: "etcd"}}, MergeOptions{}, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		updates := []Update{
			{Source: "local", Revision: "sha256:aaaa", Manifests: decoded(t, "local", podYAML("web", "file"), podYAML("cache", "file"))},
			{Source: "registry", Revision: "42", Manifests: decoded(t, "registry", podYAML("db", "etcd"), podYAML("web", "etcd"), podYAML("cache", "etcd"))},
		}
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		rng.Shuffle(len(updates), func(i, j int) { updates[i], updates[j] = updates[j], updates[i] })
		for _, u := range updates {
			m.Apply(u)
		}
		st := m.State()
		if run == 0 {
			first = st
			wantList(t, "accepted", accepted(st), []string{"web=file@sha256:aaaa", "cache=file@sha256:aaaa", "db=etcd@42"})
			wantList(t, "rejected", rejected(st), []string{"registry/web", "registry/cache"})
			for _, r := range st.Rejected {
				if !strings.Contains(strings.Join(r.Reasons, ";"), "duplicate id") {
					t.Errorf("rejection %+v does not say duplicate id", r)
				}
			}
			continue
		}
		if !reflect.DeepEqual(st.Accepted, first.Accepted) || !reflect.DeepEqual(st.Rejected, first.Rejected) {
			t.Fatalf("run %d differs from run 0:\naccepted %q rejected %q\nwant     %q rejected %q", run, accepted(st), rejected(st), accepted(first), rejected(first))
		}
	}
}

// TestMergerManifestWithoutID: a read holding a manifest without an id
// cannot say which pod it meant (the new version of web with its id line
// lost?); the source keeps its last good set and reports the error instead
// of removing the pods the read seems to lack.
func TestMergerManifestWithoutID(t *testing.T) {
	m := newMerger(t, MergeOptions{}, "cmdb")
	m.Apply(Update{Source: "cmdb", Revision: "r1", Manifests: decoded(t, "cmdb", podYAML("web", "1"), podYAML("api", "1"))})
	noID := "version: v1beta1\nlabels: {v: \"2\"}\ncontainers:\n  - name: app\n    image: example.org/app:2\n"
	m.Apply(Update{Source: "cmdb", Revision: "r2", Manifests: decoded(t, "cmdb", noID, podYAML("api", "2"))})
	st := m.State()
	wantList(t, "accepted", accepted(st), []string{"web=1@r1", "api=1@r1"})
	if s := st.Sources[0]; s.Error == "" || !strings.Contains(s.Error, "no id") || s.Revision != "r1" {
		t.Errorf("source %+v, want an error about the document without id, revision r1", s)
	}
}

// TestMergerTimes: LastSuccess moves with each good read, not with errors.
func TestMergerTimes(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	m, err := NewMerger([]SourceInfo{{Name: "a", Type: "file"}}, MergeOptions{Clock: clk}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	m.Apply(Update{Source: "a", Revision: "1", Manifests: decoded(t, "a", podYAML("x", "1"))})
	t1 := clk.Now()
	clk.Advance(time.Minute)
	m.Apply(Update{Source: "a", Err: errors.New("down")})
	if got := m.State().Sources[0].LastSuccess; !got.Equal(t1) {
		t.Errorf("lastSuccess after an error %s, want %s", got, t1)
	}
}

// TestMergerNewManifestNeverTakesRunningPodDown: a new manifest placed
// earlier in the order (api.yaml before shop.yaml) that binds the host port
// of a running pod is the one rejected; the running pod keeps its version.
// Order alone would make the newcomer win and remove the running pod.
func TestMergerNewManifestNeverTakesRunningPodDown(t *testing.T) {
	m := newMerger(t, MergeOptions{}, "fleet")
	m.Apply(Update{Source: "fleet", Revision: "r1", Manifests: decoded(t, "fleet", portPodYAML("shop", "1", 8080))})
	wantList(t, "accepted at r1", accepted(m.State()), []string{"shop=1@r1"})

	// r2: api (first in order) takes 8080; shop is unchanged.
	both := decoded(t, "fleet", portPodYAML("api", "1", 8080), portPodYAML("shop", "1", 8080))
	m.Apply(Update{Source: "fleet", Revision: "r2", Manifests: both})
	st := m.State()
	wantList(t, "accepted at r2", accepted(st), []string{"shop=1@r1"})
	wantList(t, "rejected at r2", rejected(st), []string{"fleet/api"})
	for _, rj := range st.Rejected {
		if rj.ID == "api" && !strings.Contains(strings.Join(rj.Reasons, " "), "already bound by pod shop") {
			t.Errorf("api rejected for %q, want the port taken by the running pod shop", rj.Reasons)
		}
	}
	// Deterministic: the same again gives the same answer.
	for i := 0; i < 5; i++ {
		m.Apply(Update{Source: "fleet", Revision: fmt.Sprintf("r2-%d", i), Manifests: both})
		wantList(t, "accepted again", accepted(m.State()), []string{"shop=1@r1"})
	}
}

// TestMergerStandInsFromOneFile: two pods whose last good versions were
// both the first manifest of the same file (at different revisions) are
// both kept when both new versions are rejected: stand-ins are weighed per
// pod, not per file and index (an earlier merge weighed only the first of
// them, and the other pod would have been pruned).
func TestMergerStandInsFromOneFile(t *testing.T) {
	m := newMerger(t, MergeOptions{}, "fleet")
	m.Apply(Update{Source: "fleet", Revision: "r1", Manifests: decoded(t, "fleet", podYAML("w", "1"))})
	// r2: z takes 00.yaml; w moves to 01.yaml and is invalid there.
	m.Apply(Update{Source: "fleet", Revision: "r2", Manifests: decoded(t, "fleet", podYAML("z", "1"), invalidPodYAML("w"))})
	got := accepted(m.State())
	slices.Sort(got)
	wantList(t, "accepted at r2", got, []string{"w=1@r1", "z=1@r2"})
	// r3: both invalid; both last good versions came from 00.yaml, index 0.
	m.Apply(Update{Source: "fleet", Revision: "r3", Manifests: decoded(t, "fleet", invalidPodYAML("z"), invalidPodYAML("w"))})
	st := m.State()
	got = accepted(st)
	slices.Sort(got)
	wantList(t, "accepted at r3", got, []string{"w=1@r1", "z=1@r2"})
	rj := rejected(st)
	slices.Sort(rj)
	wantList(t, "rejected at r3", rj, []string{"fleet/w", "fleet/z"})
}
