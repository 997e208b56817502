package sync_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// newHostPathEnv is newEnv with the host's hostPath rules.
func newHostPathEnv(t *testing.T, hp validate.Options) *env {
	t.Helper()
	e := newEnv(t)
	s, err := hsync.New(e.counting, hsync.Options{
		Instance: e.inst, InfraImage: e.img, InfraCommand: []string{"/demo", "pause"},
		Interval: time.Second, Concurrency: 4, Prune: true, StateDir: t.TempDir(), HostPaths: hp,
	}, dockertest.Logger(t), e.ev)
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	return e
}

// hostPathPod is one container mounting hostPath %[3]s read-only at /data,
// serving on host port %[4]d; %[5]s is the value of env REV.
const hostPathPod = `
version: v1beta1
id: %[1]s
terminationGracePeriodSeconds: 1
volumes:
  - {name: data, hostPath: %[3]q}
containers:
  - name: app
    image: %[2]s
    env:
      - {name: LISTEN, value: ":8080"}
      - {name: REV, value: %[5]q}
    ports:
      - {containerPort: 8080, hostPort: %[4]d, hostIP: 127.0.0.1}
    volumeMounts:
      - {name: data, mountPath: /data, readOnly: true}
`

// syncFails runs one sync that must fail for exactly the given pods with
// HostPathNotAllowed.
func (e *env) syncFails(pods ...string) {
	e.t.Helper()
	err := e.s.SyncOnce(e.ctx)
	if err == nil {
		e.t.Fatalf("SyncOnce succeeded, want pods %v to fail", pods)
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		line = strings.TrimSpace(line)
		ok := false
		for _, id := range pods {
			ok = ok || strings.HasPrefix(line, "pod "+id+": "+hsync.ReasonHostPath+": ")
		}
		if !ok {
			e.t.Errorf("SyncOnce: %s\nwant only %v to fail with %s", line, pods, hsync.ReasonHostPath)
		}
	}
}

// TestHostPathSymlinkAttack is finding 1 of issue 12 against the engine:
// `ln -s SOCKET ALLOWED/dsock` and `ln -s /etc ALLOWED/etc`, then hostPath
// volumes through them. Validation refuses them; a pod that reaches the
// syncer anyway (its link swapped after validation) fails with
// HostPathNotAllowed and nothing is mounted; an allowed link mounts its
// resolved target.
func TestHostPathSymlinkAttack(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	allowed := filepath.Join(root, "allowed")
	real := filepath.Join(allowed, "real")
	// The fake engine socket: a file at the unix path of docker.host.
	sock := filepath.Join(root, "engine", "docker.sock")
	for _, d := range []string{real, filepath.Dir(sock)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "marker"), []byte("allowed target"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(target, name string) {
		t.Helper()
		_ = os.Remove(filepath.Join(allowed, name))
		if err := os.Symlink(target, filepath.Join(allowed, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(sock, "dsock")
	link("/etc", "etc")
	link("real", "link")
	// The socket's folder is allowed too, so only the socket rule refuses it.
	hp := validate.Options{HostPathAllow: []string{allowed, filepath.Dir(sock)}, DockerHost: "unix://" + sock}
	e := newHostPathEnv(t, hp)

	port := testkit.FreePort(t)
	pods := map[string]hsync.Pod{
		"dsock": e.pod(hostPathPod, "dsock", e.img, filepath.Join(allowed, "dsock"), testkit.FreePort(t), "1"),
		"etc":   e.pod(hostPathPod, "etc", e.img, filepath.Join(allowed, "etc"), testkit.FreePort(t), "1"),
		"ok":    e.pod(hostPathPod, "ok", e.img, filepath.Join(allowed, "link"), port, "1"),
	}

	// Validation refuses the two links out.
	var src validate.Source
	for _, id := range []string{"dsock", "etc", "ok"} {
		src.Manifests = append(src.Manifests, manifest.Sourced{Origin: manifest.Origin{Source: "test", File: id + ".yaml"}, Manifest: pods[id].Manifest})
	}
	res := validate.Set([]validate.Source{src}, hp)
	if len(res.Accepted) != 1 || res.Accepted[0].Manifest.ID != "ok" || len(res.Rejected) != 2 {
		t.Fatalf("validate: accepted %d, rejected %+v; want only ok accepted", len(res.Accepted), res.Rejected)
	}
	wantReasons := map[string]string{
		"dsock": fmt.Sprintf(`test:dsock.yaml: pod "dsock": volumes[0].hostPath: %q resolves to %q (the Docker socket), which hostPathAllow does not list`, filepath.Join(allowed, "dsock"), sock),
		"etc":   fmt.Sprintf(`test:etc.yaml: pod "etc": volumes[0].hostPath: %q resolves to "/etc", which is not under any of hostPathAllow [%s, %s]`, filepath.Join(allowed, "etc"), allowed, filepath.Dir(sock)),
	}
	for _, rj := range res.Rejected {
		if len(rj.Reasons) != 1 || rj.Reasons[0] != wantReasons[rj.ID] {
			t.Errorf("validate %s: %q\nwant %q", rj.ID, rj.Reasons, wantReasons[rj.ID])
		}
	}

	// The syncer is given all three, as if the links had been swapped after
	// validation: the two links out fail and get no container.
	e.set(pods["dsock"], pods["etc"], pods["ok"])
	e.syncFails("dsock", "etc")
	for _, id := range []string{"dsock", "etc"} {
		st := e.waitPhase(id, hsync.PhaseFailed, hsync.ReasonHostPath, 10*time.Second)
		t.Logf("%s: %s", id, st.Message)
	}
	cs := e.containers()
	if _, ok := cs["dsock/app"]; ok {
		t.Errorf("pod dsock has a container: %+v", e.inspect(cs["dsock/app"].ID).Mounts)
	}
	if _, ok := cs["etc/app"]; ok {
		t.Errorf("pod etc has a container: %+v", e.inspect(cs["etc/app"].ID).Mounts)
	}

	// The allowed link mounts its resolved target.
	okID := cs["ok/app"].ID
	if okID == "" {
		t.Fatalf("pod ok has no container: %+v", e.mustStatus("ok"))
	}
	if m := e.inspect(okID).Mounts; len(m) != 1 || m[0].Source != real || m[0].Destination != "/data" {
		t.Errorf("pod ok mounts %+v, want %s at /data", m, real)
	}
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/read?path=/data/marker", port), "", "allowed target")

	// The link is swapped to /etc and the pod changed: the new version is
	// refused, the running one is left as it is, and nothing mounts /etc.
	link("/etc", "link")
	e.set(pods["dsock"], pods["etc"], e.pod(hostPathPod, "ok", e.img, filepath.Join(allowed, "link"), port, "2"))
	// dsock and etc fail again too once their backoff has passed (a
	// slow engine, a loaded machine); ok's failure is waited for below.
	e.syncFails("ok", "dsock", "etc")
	st := e.waitPhase("ok", hsync.PhaseFailed, hsync.ReasonHostPath, 10*time.Second)
	if want := fmt.Sprintf(`%q resolves to "/etc"`, filepath.Join(allowed, "link")); !strings.Contains(st.Message, want) {
		t.Errorf("pod ok: message %q, want it to say %s", st.Message, want)
	}
	cs = e.containers()
	if cs["ok/app"].ID != okID {
		t.Errorf("pod ok: container %s, want the running one %s kept", cs["ok/app"].ID, okID)
	}
	for k, c := range cs {
		for _, m := range e.inspect(c.ID).Mounts {
			if m.Source != real {
				t.Errorf("%s mounts %s", k, m.Source)
			}
		}
	}
}
