package validate_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// hostTree is a temporary host: ROOT/allowed (the allow-listed folder),
// ROOT/outside (a folder that is not allowed), ROOT/data (the target of
// the allow entry ROOT/srv, a link), and a socket-like file that plays the
// Docker socket at ROOT/allowed/run/docker.sock.
type hostTree struct {
	root    string // symlink-free
	allowed string
	sock    string
}

func newHostTree(t *testing.T) hostTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := hostTree{root: root, allowed: filepath.Join(root, "allowed")}
	h.sock = filepath.Join(h.allowed, "run", "docker.sock")
	for _, d := range []string{"allowed/run", "allowed/real/sub", "outside/secret", "data/web"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(h.sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"allowed/dsock":     h.sock,                               // the attack: a link to the socket
		"allowed/realsock":  "/var/run/docker.sock",               // a link to the engine's own socket
		"allowed/etc":       "/etc",                               // a link to the host's /etc
		"allowed/mid":       filepath.Join(root, "outside"),       // a link as a middle component
		"allowed/rel":       "../outside",                         // a relative link out
		"allowed/inner":     "real/sub",                           // a relative link that stays inside
		"allowed/runlink":   "run",                                // a link to the socket's folder
		"allowed/dangling":  filepath.Join(root, "outside/later"), // dangling, pointing out
		"allowed/pending":   filepath.Join(root, "allowed/later"), // dangling, pointing in
		"allowed/loop1":     "loop2",
		"allowed/loop2":     "loop1",
		"allowed/etcparent": "/etc/ssl",
		"srv":               filepath.Join(root, "data"), // an allow entry that is a link
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// engineSocket is where /var/run/docker.sock resolves on this machine
// (/run/docker.sock where /var/run links to /run).
func engineSocket(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "docker.sock")
}

func TestHostPathSymlinks(t *testing.T) {
	h := newHostTree(t)
	r := h.root
	allowed := []string{h.allowed}
	fakeEngine := "unix://" + h.sock
	tests := []struct {
		name       string
		allow      []string
		dockerHost string
		path       string
		want       string // the path to mount, when allowed
		err        string // the error, when refused
	}{
		{name: "plain folder", allow: allowed, path: r + "/allowed/real", want: r + "/allowed/real"},
		{name: "link inside the allowed folder", allow: allowed, path: r + "/allowed/inner", want: r + "/allowed/real/sub"},
		{name: "link to the socket", allow: allowed, dockerHost: fakeEngine, path: r + "/allowed/dsock",
			err: `"` + r + `/allowed/dsock" resolves to "` + h.sock + `" (the Docker socket), which hostPathAllow does not list`},
		{name: "the socket itself", allow: allowed, dockerHost: fakeEngine, path: h.sock,
			err: `"` + h.sock + `" is the Docker socket, which hostPathAllow does not list`},
		{name: "the socket listed", allow: []string{h.allowed, h.sock}, dockerHost: fakeEngine, path: r + "/allowed/dsock", want: h.sock},
		{name: "the socket listed through a link", allow: []string{h.allowed, r + "/allowed/dsock"}, dockerHost: fakeEngine, path: h.sock, want: h.sock},
		{name: "link to the engine's socket", allow: allowed, path: r + "/allowed/realsock",
			err: `"` + r + `/allowed/realsock" resolves to "` + engineSocket(t) + `", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "link to the engine's socket, root allowed", allow: []string{"/"}, path: r + "/allowed/realsock",
			err: `"` + r + `/allowed/realsock" resolves to "` + engineSocket(t) + `" (the Docker socket), which hostPathAllow does not list`},
		{name: "the engine's socket, root allowed", allow: []string{"/"}, path: "/var/run/docker.sock",
			err: `"/var/run/docker.sock" resolves to "` + engineSocket(t) + `" (the Docker socket), which hostPathAllow does not list`},
		{name: "link to /etc", allow: allowed, path: r + "/allowed/etc",
			err: `"` + r + `/allowed/etc" resolves to "/etc", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "file through a link to /etc", allow: allowed, path: r + "/allowed/etc/shadow",
			err: `"` + r + `/allowed/etc/shadow" resolves to "/etc/shadow", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "link as a middle component", allow: allowed, path: r + "/allowed/mid/secret",
			err: `"` + r + `/allowed/mid/secret" resolves to "` + r + `/outside/secret", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "relative link out", allow: allowed, path: r + "/allowed/rel/secret",
			err: `"` + r + `/allowed/rel/secret" resolves to "` + r + `/outside/secret", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "dot dot after a link", allow: allowed, path: r + "/allowed/etcparent/..",
			err: `"` + r + `/allowed/etcparent/.." resolves to "/etc", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "allow entry that is a link", allow: []string{r + "/srv"}, path: r + "/data/web", want: r + "/data/web"},
		{name: "path through an allow entry that is a link", allow: []string{r + "/srv"}, path: r + "/srv/web/x", want: r + "/data/web/x"},
		{name: "dangling link out", allow: allowed, path: r + "/allowed/dangling",
			err: `"` + r + `/allowed/dangling" resolves to "` + r + `/outside/later", which is not under any of hostPathAllow [` + h.allowed + `]`},
		{name: "dangling link in", allow: allowed, path: r + "/allowed/pending/x", want: r + "/allowed/later/x"},
		{name: "ancestor of the socket", allow: allowed, dockerHost: fakeEngine, path: r + "/allowed/run",
			err: `"` + r + `/allowed/run" holds the Docker socket "` + h.sock + `", which hostPathAllow does not list`},
		{name: "the allowed folder holds the socket", allow: allowed, dockerHost: fakeEngine, path: h.allowed,
			err: `"` + h.allowed + `" holds the Docker socket "` + h.sock + `", which hostPathAllow does not list`},
		{name: "link to an ancestor of the socket", allow: allowed, dockerHost: fakeEngine, path: r + "/allowed/runlink",
			err: `"` + r + `/allowed/runlink" resolves to "` + r + `/allowed/run", which holds the Docker socket "` + h.sock + `", which hostPathAllow does not list`},
		{name: "ancestor of the socket, socket listed", allow: []string{h.allowed, h.sock}, dockerHost: fakeEngine, path: r + "/allowed/run", want: r + "/allowed/run"},
		{name: "ancestor of the engine's socket", allow: []string{"/"}, path: "/var/run",
			err: `"/var/run" resolves to "` + filepath.Dir(engineSocket(t)) + `", which holds the Docker socket "` + engineSocket(t) + `", which hostPathAllow does not list`},
		{name: "root holds the engine's socket", allow: []string{"/"}, path: "/",
			err: `"/" holds the Docker socket "` + engineSocket(t) + `", which hostPathAllow does not list`},
		{name: "missing remainder is cleaned", allow: allowed, path: r + "/allowed/new//a/./b/", want: r + "/allowed/new/a/b"},
		{name: "missing remainder climbs out", allow: allowed, path: r + "/allowed/new/../../outside",
			err: `"` + r + `/allowed/new/../../outside" cannot be resolved: ".." climbs out of "` + h.allowed + `" below "new", which does not exist`},
		{name: "link loop", allow: allowed, path: r + "/allowed/loop1",
			err: `"` + r + `/allowed/loop1" cannot be resolved: more than 40 symbolic links`},
		{name: "nothing exists here (validate in CI)", allow: []string{"/nonexistent-hostlet/srv"}, path: "/nonexistent-hostlet/srv/web", want: "/nonexistent-hostlet/srv/web"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := validate.HostPath(tt.path, validate.Options{HostPathAllow: tt.allow, DockerHost: tt.dockerHost})
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("HostPath(%q) = %q, %v\nwant error %s", tt.path, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("HostPath(%q) = %q, %v; want %q", tt.path, got, err, tt.want)
			}
		})
	}
}

// TestManifestHostPathSymlinkAttack is the attack of issue 12 as written:
// `ln -s /var/run/docker.sock ALLOWED/dsock` and `ln -s /etc ALLOWED/etc`,
// then hostPath volumes through the links; the errors name the origin, the
// pod and the field.
func TestManifestHostPathSymlinkAttack(t *testing.T) {
	h := newHostTree(t)
	m := pod("web")
	m.Volumes = []manifest.Volume{
		{Name: "dsock", HostPath: h.allowed + "/realsock"},
		{Name: "etc", HostPath: h.allowed + "/etc"},
		{Name: "ok", HostPath: h.allowed + "/real"},
		{Name: "fake", HostPath: h.allowed + "/dsock"},
	}
	s := sourced("fleet", "web.yaml", 0, m)
	err := validate.Manifest(s, validate.Options{HostPathAllow: []string{"/"}, DockerHost: "unix://" + h.sock})
	var got []string
	for _, e := range validate.Flatten(err) {
		got = append(got, e.Error())
	}
	want := []string{
		`fleet:web.yaml: pod "web": volumes[0].hostPath: "` + h.allowed + `/realsock" resolves to "` + engineSocket(t) + `" (the Docker socket), which hostPathAllow does not list`,
		`fleet:web.yaml: pod "web": volumes[3].hostPath: "` + h.allowed + `/dsock" resolves to "` + h.sock + `" (the Docker socket), which hostPathAllow does not list`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("allow [/]: errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	err = validate.Manifest(s, validate.Options{HostPathAllow: []string{h.allowed}})
	got = got[:0]
	for _, e := range validate.Flatten(err) {
		got = append(got, e.Field+": "+e.Detail)
	}
	want = []string{
		`volumes[0].hostPath: "` + h.allowed + `/realsock" resolves to "` + engineSocket(t) + `", which is not under any of hostPathAllow [` + h.allowed + `]`,
		`volumes[1].hostPath: "` + h.allowed + `/etc" resolves to "/etc", which is not under any of hostPathAllow [` + h.allowed + `]`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("allow [ALLOWED]: errors\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// hostlet's stateDir (its keys, sealed sets, the files it mounts) and its
// compose.dataDir (the pods' data folders, where a planted link would
// redirect a mount) are no pod's to mount: not itself, nothing in it, no
// folder holding it, unless hostPathAllow lists it itself.
func TestHostPathStateDir(t *testing.T) {
	h := newHostTree(t)
	state := filepath.Join(h.allowed, "real")
	tests := []struct {
		name, path string
		allow      []string
		wantErr    bool
	}{
		{"the stateDir", state, []string{h.allowed}, true},
		{"in it", filepath.Join(state, "sub"), []string{h.allowed}, true},
		{"holding it", h.allowed, []string{h.allowed}, true},
		{"a link to it", filepath.Join(h.allowed, "inner"), []string{h.allowed}, true},
		{"beside it", filepath.Join(h.allowed, "run"), []string{h.allowed}, false},
		{"listed itself", filepath.Join(state, "sub"), []string{h.allowed, state}, false},
	}
	for _, tt := range tests {
		for _, own := range []struct {
			key  string
			opts validate.Options
		}{{"stateDir", validate.Options{StateDir: state}}, {"compose.dataDir", validate.Options{DataDir: state}}} {
			t.Run(own.key+"/"+tt.name, func(t *testing.T) {
				own.opts.HostPathAllow = tt.allow
				_, err := validate.HostPath(tt.path, own.opts)
				if (err != nil) != tt.wantErr {
					t.Fatalf("error %v, want an error: %v", err, tt.wantErr)
				}
				if err != nil && !strings.Contains(err.Error(), own.key) {
					t.Errorf("error %q does not name the %s", err, own.key)
				}
			})
		}
	}
}

// TestHostPathRelativeStateDir: a relative stateDir (the quickstart's
// ".hostlet-state", relative to where hostlet runs) is the folder it names
// from there. The check once compared a host path with
// resolvePath(stateDir), which walks from "/" whatever the path: the
// stateDir was checked as /.hostlet-state, and the real folder, with
// hostlet's keys and the files every pod mounts, was a pod's to mount
// read-write.
func TestHostPathRelativeStateDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, ".hostlet-state")
	if err := os.MkdirAll(filepath.Join(state, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, p := range []string{state, filepath.Join(state, "files"), dir} {
		got, err := validate.HostPath(p, validate.Options{HostPathAllow: []string{dir}, StateDir: ".hostlet-state"})
		if err == nil {
			t.Errorf("HostPath(%q) = %q allowed with stateDir .hostlet-state (that is %s): it is, or holds, hostlet's stateDir", p, got, state)
		} else if !strings.Contains(err.Error(), "stateDir") {
			t.Errorf("HostPath(%q): %v, want the stateDir refusal", p, err)
		}
	}
}
