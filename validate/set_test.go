package validate_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// pod returns a valid manifest with one container publishing the given
// host ports (TCP, all addresses).
func pod(id string, hostPorts ...int) manifest.Manifest {
	c := manifest.Container{Name: "app", Image: "example.org/app:1"}
	for i, hp := range hostPorts {
		c.Ports = append(c.Ports, manifest.Port{ContainerPort: 8000 + i, HostPort: hp})
	}
	return manifest.Manifest{Version: manifest.Version, ID: id, Containers: []manifest.Container{c}}
}

func sourced(source, file string, index int, m manifest.Manifest) manifest.Sourced {
	return manifest.Sourced{Origin: manifest.Origin{Source: source, File: file, Index: index}, Manifest: m}
}

// outcome summarises a Result as "id@source" of the accepted and rejected
// manifests, in order.
func outcome(r validate.Result) (accepted, rejected []string) {
	for _, a := range r.Accepted {
		accepted = append(accepted, a.Manifest.ID+"@"+a.Origin.Source)
	}
	for _, rj := range r.Rejected {
		rejected = append(rejected, rj.ID+"@"+rj.Source)
	}
	return accepted, rejected
}

// mixedSources is a set with every kind of outcome: duplicates within and
// across sources, port conflicts, invalid manifests, several files.
func mixedSources() []validate.Source {
	bad := pod("bad")
	bad.Containers[0].Ports = []manifest.Port{{ContainerPort: 0, HostPort: 70000, Protocol: "SCTP"}}
	udp := pod("dns-udp", 53)
	udp.Containers[0].Ports[0].Protocol = "udp"
	local := pod("local", 9000)
	local.Containers[0].Ports[0].HostIP = "127.0.0.1"
	return []validate.Source{
		{Name: "fleet", Manifests: []manifest.Sourced{
			sourced("fleet", "a.yaml", 0, pod("web", 80, 443)),
			sourced("fleet", "a.yaml", 1, pod("api", 8080)),
			sourced("fleet", "b.yaml", 0, pod("web", 81)),
			sourced("fleet", "b.yaml", 1, bad),
			sourced("fleet", "c.yaml", 0, pod("dns", 53)),
			sourced("fleet", "c.yaml", 1, udp),
		}},
		{Name: "local", Manifests: []manifest.Sourced{
			sourced("local", "x.yaml", 0, pod("proxy", 80)),
			sourced("local", "x.yaml", 1, pod("api", 8081)),
			sourced("local", "y.yaml", 0, pod("all", 9000)),
			sourced("local", "y.yaml", 1, local),
		}},
	}
}

func TestSetDeterministic(t *testing.T) {
	first := validate.Set(mixedSources(), validate.Options{})
	acc, rej := outcome(first)
	wantAcc := []string{"web@fleet", "api@fleet", "dns@fleet", "dns-udp@fleet", "all@local"}
	wantRej := []string{"web@fleet", "bad@fleet", "proxy@local", "api@local", "local@local"}
	if !slices.Equal(acc, wantAcc) || !slices.Equal(rej, wantRej) {
		t.Fatalf("accepted %v, rejected %v; want %v, %v", acc, rej, wantAcc, wantRej)
	}
	for i := range 20 {
		got := validate.Set(mixedSources(), validate.Options{})
		if !reflect.DeepEqual(got, first) {
			t.Fatalf("run %d differs from the first:\n got %+v\nwant %+v", i, got, first)
		}
		if got.Err().Error() != first.Err().Error() {
			t.Fatalf("run %d: errors differ", i)
		}
	}
}

// permutations returns every order of the indexes 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// TestSetWinnerByOrderOnly gives several sources the same id, or the same
// host port, in every order: the first source in the order given always
// wins, whatever the names of sources or pods.
func TestSetWinnerByOrderOnly(t *testing.T) {
	names := []string{"zeta", "alpha", "mid", "beta"}
	tests := []struct {
		name string
		// make returns the manifest of source i.
		make func(i int) manifest.Manifest
		// id returns the id of that manifest.
		id func(i int) string
	}{
		{
			name: "duplicate id",
			make: func(i int) manifest.Manifest { return pod("web", 1000+i) },
			id:   func(int) string { return "web" },
		},
		{
			name: "host port",
			make: func(i int) manifest.Manifest { return pod(names[i], 80) },
			id:   func(i int) string { return names[i] },
		},
		{
			name: "host port on one address against all",
			make: func(i int) manifest.Manifest {
				m := pod(names[i], 80)
				if i%2 == 1 {
					m.Containers[0].Ports[0].HostIP = "10.0.0.1"
				}
				return m
			},
			id: func(i int) string { return names[i] },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, perm := range permutations(len(names)) {
				var sources []validate.Source
				for _, i := range perm {
					sources = append(sources, validate.Source{Name: names[i], Manifests: []manifest.Sourced{
						sourced(names[i], "m.yaml", 0, tt.make(i)),
					}})
				}
				acc, rej := outcome(validate.Set(sources, validate.Options{}))
				wantAcc := []string{tt.id(perm[0]) + "@" + names[perm[0]]}
				var wantRej []string
				for _, i := range perm[1:] {
					wantRej = append(wantRej, tt.id(i)+"@"+names[i])
				}
				if !slices.Equal(acc, wantAcc) || !slices.Equal(rej, wantRej) {
					t.Errorf("order %v: accepted %v, rejected %v; want %v, %v", perm, acc, rej, wantAcc, wantRej)
				}
			}
		})
	}
}

func TestSetRejections(t *testing.T) {
	invalid := pod("web")
	invalid.RestartPolicy = "always"
	loopback := pod("local", 80)
	loopback.Containers[0].Ports[0].HostIP = "127.0.0.1"
	mapped := pod("mapped", 80)
	mapped.Containers[0].Ports[0].HostIP = "::ffff:127.0.0.1"
	unspecified := pod("any", 80)
	unspecified.Containers[0].Ports[0].HostIP = "0.0.0.0"
	v6 := pod("v6", 80)
	v6.Containers[0].Ports[0].HostIP = "::1"
	twice := pod("twice", 80, 80)
	named := func(id string, names ...string) manifest.Manifest {
		m := pod(id)
		for i, n := range names {
			if i > 0 {
				m.Containers = append(m.Containers, manifest.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox"})
			}
			m.Containers[i].ContainerName = n
		}
		return m
	}
	data := func(id string, folders ...string) manifest.Manifest {
		m := pod(id)
		for i, f := range folders {
			n := fmt.Sprintf("d%d", i)
			m.Volumes = append(m.Volumes, manifest.Volume{Name: n, DataFolder: f})
			m.Containers[0].VolumeMounts = append(m.Containers[0].VolumeMounts, manifest.VolumeMount{Name: n, MountPath: "/" + n})
		}
		return m
	}
	tests := []struct {
		name    string
		sources []validate.Source
		want    []string
	}{
		{
			name: "data folders inside one another, or of a project of another folder",
			sources: []validate.Source{
				{Name: "a", Manifests: []manifest.Sourced{
					sourced("a", "shop/compose.yaml", 0, data("shop-web", "shop/data", "shop/deep/x")),
					sourced("a", "shop/compose.yaml", 1, data("shop-db", "shop/data/db")),
					sourced("a", "shop/compose.yaml", 2, data("shop-cache", "shop/data")),
					sourced("a", "shop/compose.yaml", 3, data("shop-self", "shop/self", "shop/self/inner")),
					sourced("a", "shop/compose.yaml", 4, data("shop-outer", "shop/deep")),
				}},
				{Name: "b", Manifests: []manifest.Sourced{sourced("b", "deploy/compose.yaml", 0, data("other-db", "shop/pg"))}},
			},
			want: []string{
				`a:shop/compose.yaml: pod "shop-db": volumes[0].dataFolder: data folder shop/data/db lies inside data folder shop/data of pod shop-web: a container could turn the inner one into a link the engine follows on the host; give each its own folder (./db beside ./data)`,
				`a:shop/compose.yaml: pod "shop-self": volumes[1].dataFolder: data folder shop/self/inner lies inside data folder shop/self of pod shop-self: a container could turn the inner one into a link the engine follows on the host; give each its own folder (./db beside ./data)`,
				`a:shop/compose.yaml: pod "shop-outer": volumes[0].dataFolder: data folder shop/deep holds data folder shop/deep/x of pod shop-web: a container could turn the inner one into a link the engine follows on the host; give each its own folder (./db beside ./data)`,
				`b:deploy/compose.yaml: pod "other-db": volumes[0].dataFolder: data folder shop/pg: the data folders of project shop are those of the project in a:shop (give this project another name)`,
			},
		},
		{
			name: "an invalid first manifest keeps its id",
			sources: []validate.Source{
				{Name: "a", Manifests: []manifest.Sourced{sourced("a", "f.yaml", 0, invalid)}},
				{Name: "b", Manifests: []manifest.Sourced{sourced("b", "g.yaml", 2, pod("web"))}},
			},
			want: []string{
				`a:f.yaml: pod "web": restartPolicy: "always" is not one of Always, OnFailure, Never`,
				`b:g.yaml: pod "web": id: duplicate id: already declared by manifest 1 of a:f.yaml (the first source, file and manifest to declare an id wins)`,
			},
		},
		{
			name: "the origin's source defaults to the source's name",
			sources: []validate.Source{
				{Name: "a", Manifests: []manifest.Sourced{{Manifest: pod("web", 80)}}},
				{Name: "b", Manifests: []manifest.Sourced{{Origin: manifest.Origin{File: "x.yaml", Index: 1}, Manifest: pod("api", 80)}}},
			},
			want: []string{`b:x.yaml: pod "api": containers[0].ports[0].hostPort: host port 80/TCP already bound by pod web (a)`},
		},
		{
			name: "addresses",
			sources: []validate.Source{{Name: "a", Manifests: []manifest.Sourced{
				sourced("a", "f.yaml", 0, loopback),
				sourced("a", "f.yaml", 1, mapped),
				sourced("a", "f.yaml", 2, unspecified),
				sourced("a", "f.yaml", 3, v6),
			}}},
			want: []string{
				`a:f.yaml: pod "mapped": containers[0].ports[0].hostPort: host port 127.0.0.1:80/TCP already bound by pod local (a)`,
				`a:f.yaml: pod "any": containers[0].ports[0].hostPort: host port 80/TCP already bound by pod local (a)`,
			},
		},
		{
			name: "one pod binding a port twice",
			sources: []validate.Source{{Name: "a", Manifests: []manifest.Sourced{
				sourced("a", "f.yaml", 0, twice),
				sourced("a", "f.yaml", 1, pod("after", 80)),
			}}},
			want: []string{`a:f.yaml: pod "twice": containers[0].ports[1].hostPort: host port 80/TCP is bound twice in this pod`},
		},
		{
			name: "a container name chosen twice",
			sources: []validate.Source{
				{Name: "a", Manifests: []manifest.Sourced{sourced("a", "f.yaml", 0, named("web", "nextcloud"))}},
				{Name: "b", Manifests: []manifest.Sourced{
					sourced("b", "g.yaml", 0, named("other", "nextcloud")),
					sourced("b", "g.yaml", 1, named("pair", "db", "db")),
					sourced("b", "g.yaml", 2, named("case", "NextCloud")),
				}},
			},
			want: []string{
				`b:g.yaml: pod "other": containers[0].containerName: container name "nextcloud" is already taken by pod web (a)`,
				`b:g.yaml: pod "pair": containers[1].containerName: container name "db" is given twice in this pod`,
			},
		},
		{
			name: "decode errors kept in the manifest come first",
			sources: []validate.Source{{Name: "a", Manifests: []manifest.Sourced{{
				Origin:   manifest.Origin{Source: "a", File: "f.yaml"},
				Manifest: invalid,
				Errors:   []*manifest.Error{{Origin: manifest.Origin{Source: "a", File: "f.yaml"}, Pod: "web", Field: "hostport", Detail: "unknown field"}},
			}}}},
			want: []string{
				`a:f.yaml: pod "web": hostport: unknown field`,
				`a:f.yaml: pod "web": restartPolicy: "always" is not one of Always, OnFailure, Never`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := validate.Set(tt.sources, validate.Options{})
			var got []string
			for _, rj := range res.Rejected {
				if len(rj.Reasons) == 0 || len(rj.Reasons) != len(rj.Errors) {
					t.Errorf("rejection %s has %d reasons and %d errors", rj.ID, len(rj.Reasons), len(rj.Errors))
				}
				for i, e := range rj.Errors {
					if e.Error() != rj.Reasons[i] {
						t.Errorf("reason %q differs from error %q", rj.Reasons[i], e)
					}
				}
				got = append(got, rj.Reasons...)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("reasons:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
			if err := res.Err(); (err == nil) != (len(tt.want) == 0) {
				t.Errorf("Err() = %v", err)
			}
		})
	}
}

func TestSetDoesNotModifyInput(t *testing.T) {
	sources := mixedSources()
	sources[0].Manifests[0].Origin.Source = ""
	before := fmt.Sprintf("%+v", sources)
	validate.Set(sources, validate.Options{})
	if after := fmt.Sprintf("%+v", sources); after != before {
		t.Errorf("Set changed its input:\nbefore %s\n after %s", before, after)
	}
}

func TestFlatten(t *testing.T) {
	e1 := &manifest.Error{Detail: "one"}
	e2 := &manifest.Error{Detail: "two"}
	e3 := &manifest.Error{Detail: "three"}
	nested := multierror.Append(e1, multierror.Append(e2, e3))
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{name: "nil", err: nil, want: nil},
		{name: "one", err: e1, want: []string{"one"}},
		{name: "nested", err: nested, want: []string{"one", "two", "three"}},
		{name: "wrapped", err: fmt.Errorf("reading: %w", e2), want: []string{"two"}},
		{name: "plain", err: errors.New("plain"), want: []string{"plain"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range validate.Flatten(tt.err) {
				got = append(got, e.Error())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Flatten = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestManifestHostPathAllow(t *testing.T) {
	tests := []struct {
		name  string
		allow []string
		path  string
		want  string
	}{
		{name: "under", allow: []string{"/srv"}, path: "/srv/web", want: ""},
		{name: "the folder itself", allow: []string{"/srv"}, path: "/srv", want: ""},
		{name: "trailing slash in allow", allow: []string{"/srv/"}, path: "/srv/web", want: ""},
		{name: "second entry", allow: []string{"/srv", "/data"}, path: "/data/x", want: ""},
		{name: "root allows all", allow: []string{"/"}, path: "/etc", want: ""},
		{name: "prefix is not a folder", allow: []string{"/srv"}, path: "/srvx", want: `volumes[0].hostPath: "/srvx" is not under any of hostPathAllow [/srv]`},
		{name: "dot dot", allow: []string{"/srv"}, path: "/srv/../etc", want: `volumes[0].hostPath: "/srv/../etc" is not under any of hostPathAllow [/srv]`},
		{name: "none allowed", allow: nil, path: "/srv/web", want: `volumes[0].hostPath: "/srv/web" is not allowed: this host's hostPathAllow is empty`},
		{name: "relative", allow: []string{"/srv"}, path: "web", want: `volumes[0].hostPath: "web" is not an absolute path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("web")
			m.Volumes = []manifest.Volume{{Name: "v", HostPath: tt.path}}
			err := validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{HostPathAllow: tt.allow})
			var got []string
			for _, e := range validate.Flatten(err) {
				got = append(got, e.Field+": "+e.Detail)
			}
			if want := []string{tt.want}; tt.want == "" && len(got) > 0 || tt.want != "" && !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, tt.want)
			}
		})
	}
}

// BenchmarkSet checks a host's worth and more of pods, each binding its
// own host port: the cost must grow linearly, not with the square.
func BenchmarkSet(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			src := validate.Source{Name: "a"}
			for i := range n {
				src.Manifests = append(src.Manifests, sourced("a", "f.yaml", i, pod(fmt.Sprintf("p%d", i), 1+i%65535)))
			}
			sources := []validate.Source{src}
			for b.Loop() {
				validate.Set(sources, validate.Options{})
			}
		})
	}
}

// TestSetRejectsDependsOnCycleAcrossManifests: a cycle across manifests
// (a waits for b, b waits for a) is refused by Set: accepted, both pods
// would wait forever (sync's dependsOn cycle test shows the deadlock).
func TestSetRejectsDependsOnCycleAcrossManifests(t *testing.T) {
	a, b := pod("a"), pod("b")
	a.DependsOn = []manifest.Dependency{{Pod: "b"}}
	b.DependsOn = []manifest.Dependency{{Pod: "a"}}
	r := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "a.yaml", 0, a), sourced("s", "b.yaml", 0, b)}}}, validate.Options{})
	if len(r.Rejected) == 0 {
		t.Error("dependsOn cycle a -> b -> a accepted")
	}
}

// TestSetRejectsConflictingNetworkDeclarations: two pods may not declare
// one hostlet network differently (internal in one, not in the other):
// accepted, whichever is created first would decide, silently.
func TestSetRejectsConflictingNetworkDeclarations(t *testing.T) {
	a, b := pod("a"), pod("b")
	a.Networks = []manifest.Network{{Name: "db_net", Internal: true}}
	b.Networks = []manifest.Network{{Name: "db_net"}}
	r := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "a.yaml", 0, a), sourced("s", "b.yaml", 0, b)}}}, validate.Options{})
	if len(r.Rejected) == 0 {
		t.Error("db_net declared internal by a and not internal by b: both accepted")
	}
}
