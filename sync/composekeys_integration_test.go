package sync_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
)

// TestRelabelledMountsReachTheEngine (real engine): a mount's SELinux
// relabelling (Compose's :z and :Z) is given to the engine in the bind
// form that carries it, for a volume, a data folder and project files (a
// files copy shared by every container with that content: z, never Z),
// read-only where asked; on a host without SELinux the engine takes it
// and does nothing (Docker shows it back, Podman drops it).
func TestRelabelledMountsReachTheEngine(t *testing.T) {
	e := newEnv(t)
	vol := "hostlet-test-relabel-" + e.inst
	e.set(e.pod(`
version: v1beta1
id: web
volumes:
  - {name: db, dockerVolume: %s}
  - {name: data, dataFolder: shop/data}
  - {name: conf, files: {source: conf.txt, items: [{data: %s}]}}
containers:
  - name: app
    image: %s
    command: ["/demo", "pause"]
    volumeMounts:
      - {name: db, mountPath: /var/lib/db, selinuxRelabel: Z}
      - {name: data, mountPath: /data, selinuxRelabel: z}
      - {name: conf, mountPath: /etc/conf.txt, selinuxRelabel: Z}
`, vol, base64.StdEncoding.EncodeToString([]byte("x")), e.img))
	e.sync()
	t.Cleanup(func() { _ = e.rt.RemoveVolume(e.ctx, vol) })
	c := slotOf(t, e.rt)
	if len(c) != 1 || !c[0].Running() {
		t.Fatalf("containers %+v", c)
	}
	r := e.inspect(c[0].ID)
	var binds []string
	for _, b := range r.HostConfig.Binds {
		parts := strings.Split(b, ":")
		opts := strings.Split(parts[len(parts)-1], ",")
		// Docker gives back the options as given. Podman adds its own
		// (rprivate, rbind, ...) and, on a host without SELinux, drops
		// the relabelling of a bind mount (a no-op there, as on Docker):
		// a relabelling shown must be the one asked for.
		kept := slices.DeleteFunc(opts, func(o string) bool { return o != "rw" && o != "ro" && o != "z" && o != "Z" })
		binds = append(binds, parts[len(parts)-2]+":"+strings.Join(kept, ","))
	}
	slices.Sort(binds)
	want := []string{"/data:rw,z", "/etc/conf.txt:ro,z", "/var/lib/db:rw,Z"}
	for i := range binds {
		if e.rt.Engine().Podman() && i < len(want) && strings.HasPrefix(want[i], binds[i]+",") {
			binds[i] = want[i] // dropped by Podman
		}
	}
	if fmt.Sprint(binds) != fmt.Sprint(want) {
		t.Errorf("binds %q, want %q", r.HostConfig.Binds, want)
	}
	for _, m := range r.Mounts {
		if want := m.Destination != "/etc/conf.txt"; m.RW != want {
			t.Errorf("%s: read-write %v, want %v", m.Destination, m.RW, want)
		}
	}
}

// TestARandomHostPortIsShownInStatus (real engine): a port published on
// a host port the engine picks (Compose's "8080") answers there, and the
// status of the container declaring it says which: in a pod of one, and
// in a pod of two, whose ports its infra container publishes.
func TestARandomHostPortIsShownInStatus(t *testing.T) {
	for _, side := range []string{"", "  - {name: side, image: %[1]s, command: [/demo, pause]}\n"} {
		t.Run(fmt.Sprintf("pod of %d", 1+strings.Count(side, "name:")), func(t *testing.T) {
			e := newEnv(t)
			e.set(e.pod(`
version: v1beta1
id: web
containers:
  - name: app
    image: %[1]s
    ports: [{containerPort: 8080, hostIP: 127.0.0.1, randomHostPort: true}]
`+side, e.img))
			e.sync()
			c, _ := e.containerStatus("web", "app")
			if len(c.Published) != 1 || !strings.HasPrefix(c.Published[0], "127.0.0.1:") || !strings.HasSuffix(c.Published[0], "->8080/tcp") {
				t.Fatalf("published %q, want one 127.0.0.1:PORT->8080/tcp", c.Published)
			}
			host, _, _ := strings.Cut(c.Published[0], "->")
			testkit.WaitHTTP(t, 30*time.Second, "GET", "http://"+host+"/", "", "")
		})
	}
}

// TestAContainerRunsOnTheEnginesPlatform (real engine): a platform that
// is the engine's (Compose's platform: linux/amd64 on such a host) is
// given to the create and the container runs.
func TestAContainerRunsOnTheEnginesPlatform(t *testing.T) {
	e := newEnv(t)
	platform := e.rt.Engine().Platform
	if platform == "" {
		t.Fatal("the engine says no platform")
	}
	e.set(e.pod("version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: %s, command: [/demo, pause], platform: %s}\n", e.img, platform))
	e.sync()
	if c := slotOf(t, e.rt); len(c) != 1 || !c[0].Running() {
		t.Fatalf("containers %+v, want one running", c)
	}
}

// TestATerminalAndAnOpenStdinReachTheEngine (real engine): tty and
// stdinOpen (Compose's tty and stdin_open) are the container's.
func TestATerminalAndAnOpenStdinReachTheEngine(t *testing.T) {
	e := newEnv(t)
	e.set(e.pod("version: v1beta1\nid: web\ncontainers:\n  - {name: app, image: %s, command: [/demo, pause], tty: true, stdinOpen: true}\n", e.img))
	e.sync()
	c := slotOf(t, e.rt)
	if len(c) != 1 || !c[0].Running() {
		t.Fatalf("containers %+v, want one running", c)
	}
	if r := e.inspect(c[0].ID); !r.Config.Tty || !r.Config.OpenStdin {
		t.Errorf("tty %v, open stdin %v; want both", r.Config.Tty, r.Config.OpenStdin)
	}
}
