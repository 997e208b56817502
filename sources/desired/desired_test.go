package desired

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// pod is a valid manifest of source src with label v; hostPorts are bound
// by its one container.
func pod(src, id, v string, hostPorts ...int) manifest.Sourced {
	c := manifest.Container{Name: "app", Image: "example.org/app:" + v}
	for _, hp := range hostPorts {
		c.Ports = append(c.Ports, manifest.Port{ContainerPort: hp, HostPort: hp})
	}
	return manifest.Sourced{
		Origin:   manifest.Origin{Source: src, File: id + ".yaml"},
		Manifest: manifest.Manifest{Version: "v1beta1", ID: id, Labels: map[string]string{"v": v}, Containers: []manifest.Container{c}},
	}
}

// invalid is a manifest of source src that fails the field rules.
func invalid(src, id, v string) manifest.Sourced {
	s := pod(src, id, v)
	s.Manifest.Containers[0].Image = ""
	return s
}

// withError is s with a decode error.
func withError(s manifest.Sourced, detail string) manifest.Sourced {
	s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Detail: detail})
	return s
}

// delivered is a delivered source at revision rev holding ms.
func delivered(name, rev string, ms ...manifest.Sourced) Source {
	return Source{Snapshot: manifest.Snapshot{Name: name, Type: "file", Revision: rev, Manifests: ms}, Delivered: true}
}

// was records s, accepted at revision rev, as its id's last accepted
// version in v.
func was(v Versions, rev string, s manifest.Sourced) Versions {
	if v == nil {
		v = Versions{}
	}
	if v[s.Origin.Source] == nil {
		v[s.Origin.Source] = map[string]Entry{}
	}
	v[s.Origin.Source][s.Manifest.ID] = Entry{Sourced: s, Revision: rev}
	return v
}

var kinds = map[Kind]string{Declared: "", StandIn: " (stand-in)", Running: " (running)"}

// describe renders the accepted entries as source/id=v@rev (kind) and the
// rejections as source/id.
func describe(r Result) (acc, rej []string) {
	for _, e := range r.Accepted {
		acc = append(acc, fmt.Sprintf("%s/%s=%s@%s%s", e.Origin.Source, e.Manifest.ID, e.Manifest.Labels["v"], e.Revision, kinds[e.Kind]))
	}
	for _, rj := range r.Rejected {
		rej = append(rej, rj.Source+"/"+rj.ID)
	}
	return acc, rej
}

func TestCompute(t *testing.T) {
	tests := []struct {
		name      string
		sources   []Source
		accepted  Versions
		want      []string
		rejected  []string
		notReady  bool
		reasonHas string // in the first rejection's reasons
	}{
		{
			name:    "sources in config order, each in its own order",
			sources: []Source{delivered("a", "a1", pod("a", "web", "1"), pod("a", "api", "1")), delivered("b", "b1", pod("b", "db", "1"))},
			want:    []string{"a/web=1@a1", "a/api=1@a1", "b/db=1@b1"},
		},
		{
			name:      "duplicate id across sources: the first source wins",
			sources:   []Source{delivered("a", "a1", pod("a", "web", "1")), delivered("b", "b1", pod("b", "web", "2"))},
			want:      []string{"a/web=1@a1"},
			rejected:  []string{"b/web"},
			reasonHas: "duplicate id",
		},
		{
			name:      "duplicate id within a source: the first manifest wins",
			sources:   []Source{delivered("a", "a1", pod("a", "web", "1"), pod("a", "web", "2"))},
			want:      []string{"a/web=1@a1"},
			rejected:  []string{"a/web"},
			reasonHas: "duplicate id",
		},
		{
			name:      "host-port conflict: the later manifest loses",
			sources:   []Source{delivered("a", "a1", pod("a", "web", "1", 8080)), delivered("b", "b1", pod("b", "api", "1", 8080))},
			want:      []string{"a/web=1@a1"},
			rejected:  []string{"b/api"},
			reasonHas: "host port 8080/TCP already bound by pod web (a)",
		},
		{
			name:     "an invalid new version: the last accepted version stands in",
			sources:  []Source{delivered("a", "a2", invalid("a", "web", "2"))},
			accepted: was(nil, "a1", pod("a", "web", "1")),
			want:     []string{"a/web=1@a1 (stand-in)"},
			rejected: []string{"a/web"},
		},
		{
			// A Compose key hostlet refuses leaves the fields as they were.
			name:      "a new version whose only change is a decode error is reported",
			sources:   []Source{delivered("a", "a2", withError(pod("a", "web", "1"), "services.web.privileged: not supported by hostlet yet"))},
			accepted:  was(nil, "a1", pod("a", "web", "1")),
			want:      []string{"a/web=1@a1 (stand-in)"},
			rejected:  []string{"a/web"},
			reasonHas: "services.web.privileged",
		},
		{
			name:     "an invalid new version without an accepted one: nothing runs",
			sources:  []Source{delivered("a", "a2", invalid("a", "web", "2"))},
			rejected: []string{"a/web"},
		},
		{
			name: "a stand-in keeps its host port against a newcomer of an earlier source",
			sources: []Source{
				delivered("b", "b1", pod("b", "edge", "1", 8080)),
				delivered("a", "a2", invalid("a", "web", "2")),
			},
			accepted: was(nil, "a1", pod("a", "web", "1", 8080)),
			want:     []string{"a/web=1@a1 (stand-in)"},
			rejected: []string{"a/web", "b/edge"},
		},
		{
			name: "an unchanged manifest that wins back its port is not reported",
			sources: []Source{
				delivered("b", "b1", pod("b", "edge", "1", 8080)),
				delivered("a", "a1", pod("a", "web", "1", 8080)),
			},
			accepted: was(nil, "a1", pod("a", "web", "1", 8080)),
			want:     []string{"a/web=1@a1 (stand-in)"},
			rejected: []string{"b/edge"},
		},
		{
			name:     "a duplicate losing to an earlier source does not stand in",
			sources:  []Source{delivered("a", "a1", pod("a", "web", "1")), delivered("b", "b2", pod("b", "web", "2"))},
			accepted: was(nil, "b1", pod("b", "web", "1")),
			want:     []string{"a/web=1@a1"},
			rejected: []string{"b/web"},
		},
		{
			name:     "a source not delivered yet: not ready, what the others hold stands",
			sources:  []Source{delivered("a", "a1", pod("a", "web", "1")), {Snapshot: manifest.Snapshot{Name: "b"}}},
			want:     []string{"a/web=1@a1"},
			notReady: true,
		},
		{
			name:    "no source at all: ready, nothing desired",
			sources: nil,
		},
		{
			name:    "a seeded source: what runs of it, marked running",
			sources: []Source{seeded("a", Pod{Source: "a", Manifest: pod("a", "web", "1").Manifest})},
			want:    []string{"a/web=1@ (running)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Compute(Input{Sources: tt.sources, Accepted: tt.accepted})
			acc, rej := describe(r)
			if !slices.Equal(acc, tt.want) {
				t.Errorf("accepted %q, want %q", acc, tt.want)
			}
			if !slices.Equal(rej, tt.rejected) {
				t.Errorf("rejected %q, want %q", rej, tt.rejected)
			}
			if r.Ready == tt.notReady {
				t.Errorf("ready %v, want %v", r.Ready, !tt.notReady)
			}
			if tt.reasonHas != "" && (len(r.Rejected) == 0 || !strings.Contains(strings.Join(r.Rejected[0].Reasons, "; "), tt.reasonHas)) {
				t.Errorf("rejections %+v, want the first to say %q", r.Rejected, tt.reasonHas)
			}
		})
	}
}

func seeded(name string, pods ...Pod) Source {
	s, _ := Seed(name, "git", pods)
	return s
}

// TestComputeVersions: the versions to persist are the accepted declared
// manifests, with the ids a source no longer declares forgotten; a
// stand-in leaves its accepted version as it was; the input is not
// changed.
func TestComputeVersions(t *testing.T) {
	in := Input{
		Sources: []Source{delivered("a", "a2", pod("a", "web", "2"), invalid("a", "api", "2"))},
		Accepted: was(was(was(nil, "a1", pod("a", "web", "1")), "a1", pod("a", "api", "1")),
			"a1", pod("a", "gone", "1")),
	}
	r := Compute(in)
	got := map[string]string{}
	for id, e := range r.Versions["a"] {
		got[id] = e.Manifest.Labels["v"] + "@" + e.Revision
	}
	want := map[string]string{"web": "2@a2", "api": "1@a1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("versions %v, want %v", got, want)
	}
	if e := in.Accepted["a"]["web"]; e.Revision != "a1" || len(in.Accepted["a"]) != 3 {
		t.Errorf("the input's versions changed: %+v", in.Accepted["a"])
	}
}

// TestAdmit: what a read makes of a source's set in effect (the empty-set
// guard among it).
func TestAdmit(t *testing.T) {
	held := delivered("a", "a1", pod("a", "web", "1"))
	noID := pod("a", "", "2")
	tests := []struct {
		name       string
		src        Source
		snap       manifest.Snapshot
		readErr    error
		allowEmpty bool
		wantErr    error  // errors.Is
		errHas     string // in the error
		want       []string
	}{
		{name: "a new set replaces the old", src: held, snap: manifest.Snapshot{Revision: "a2", Manifests: []manifest.Sourced{pod("a", "api", "2")}}, want: []string{"api@a2"}},
		{name: "a failed read keeps the set", src: held, readErr: errors.New("connection refused"), errHas: "connection refused", want: []string{"web@a1"}},
		{name: "empty where it held manifests: refused", src: held, snap: manifest.Snapshot{Revision: "a2"}, wantErr: ErrEmpty, errHas: "but held 1 at revision a1", want: []string{"web@a1"}},
		{name: "empty with allowEmpty: taken", src: held, snap: manifest.Snapshot{Revision: "a2"}, allowEmpty: true},
		{name: "empty where it held nothing: taken", src: Source{Snapshot: manifest.Snapshot{Name: "a"}}, snap: manifest.Snapshot{Revision: "a2"}},
		{name: "a document without an id: refused whole", src: held, snap: manifest.Snapshot{Revision: "a2", Manifests: []manifest.Sourced{pod("a", "api", "2"), noID}}, errHas: "has no id", want: []string{"web@a1"}},
		{name: "a read replaces a seeded set", src: seeded("a", Pod{Source: "a", Manifest: pod("a", "web", "1").Manifest}), snap: manifest.Snapshot{Revision: "a2", Manifests: []manifest.Sourced{pod("a", "web", "2")}}, want: []string{"web@a2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Admit(tt.src, tt.snap, tt.readErr, Options{AllowEmpty: tt.allowEmpty})
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("error %v, want %v", err, tt.wantErr)
			case tt.errHas != "" && (err == nil || !strings.Contains(err.Error(), tt.errHas)):
				t.Errorf("error %v, want one saying %q", err, tt.errHas)
			case tt.wantErr == nil && tt.errHas == "" && err != nil:
				t.Errorf("error %v, want none", err)
			}
			var set []string
			for _, m := range got.Manifests {
				set = append(set, m.Manifest.ID+"@"+got.Revision)
			}
			if !slices.Equal(set, tt.want) {
				t.Errorf("set %q, want %q", set, tt.want)
			}
			if err == nil && (!got.Delivered || got.Running || got.Name != "a") {
				t.Errorf("taken set: delivered %v, running %v, name %q; want delivered, not running, a", got.Delivered, got.Running, got.Name)
			}
		})
	}
}

// TestSeed: what runs of a source, sorted by id, as its set and versions;
// another source's pods are not its own; nothing running is not delivered.
func TestSeed(t *testing.T) {
	web, api := pod("a", "web", "1").Manifest, pod("a", "api", "1").Manifest
	src, good := Seed("a", "git", []Pod{{Source: "a", Manifest: web}, {Source: "b", Manifest: api}, {Source: "a", Manifest: api}})
	var ids []string
	for _, m := range src.Manifests {
		ids = append(ids, m.Manifest.ID)
	}
	if !slices.Equal(ids, []string{"api", "web"}) || !src.Delivered || !src.Running || len(good) != 2 {
		t.Errorf("seeded %q delivered=%v running=%v with %d versions; want [api web], delivered, running, 2", ids, src.Delivered, src.Running, len(good))
	}
	if src.Manifests[0].Origin == src.Manifests[1].Origin {
		t.Errorf("two running pods share the origin %v", src.Manifests[0].Origin)
	}
	if empty, _ := Seed("c", "file", []Pod{{Source: "a", Manifest: web}}); empty.Delivered || len(empty.Manifests) != 0 {
		t.Errorf("a source with nothing running: %+v, want not delivered and empty", empty)
	}
}

// TestComputeFromRunning: as `hostlet diff` computes: every source seeded
// with what runs of it, then what it read admitted. Two running pods of one
// source whose new versions are both invalid both stay as they run, and a
// source that could not be read keeps what runs of it.
func TestComputeFromRunning(t *testing.T) {
	running := []Pod{
		{Source: "a", Manifest: pod("a", "web", "1", 8080).Manifest},
		{Source: "a", Manifest: pod("a", "api", "1", 9090).Manifest},
		{Source: "b", Manifest: pod("b", "db", "1").Manifest},
	}
	in := Input{Accepted: Versions{}}
	reads := map[string]struct {
		snap manifest.Snapshot
		err  error
	}{
		"a": {snap: manifest.Snapshot{Name: "a", Revision: "a2", Manifests: []manifest.Sourced{invalid("a", "web", "2"), invalid("a", "api", "2")}}},
		"b": {err: errors.New("connection refused")},
	}
	for _, name := range []string{"a", "b"} {
		src, good := Seed(name, "git", running)
		in.Accepted[name] = good
		src, _ = Admit(src, reads[name].snap, reads[name].err, in.Options)
		in.Sources = append(in.Sources, src)
	}
	acc, rej := describe(Compute(in))
	if want := []string{"a/web=1@ (stand-in)", "a/api=1@ (stand-in)", "b/db=1@ (running)"}; !slices.Equal(acc, want) {
		t.Errorf("accepted %q, want %q", acc, want)
	}
	if want := []string{"a/web", "a/api"}; !slices.Equal(rej, want) {
		t.Errorf("rejected %q, want %q", rej, want)
	}
}
