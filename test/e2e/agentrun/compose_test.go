package agentrun_test

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	stdnet "net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest/compose"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// TestComposeProject runs a two-service Compose project from a file source
// on the real engine: each service is a pod with Compose's labels,
// interpolated from .env and the host's compose.env; web reaches api by
// its service name on the project's network; api's named volume keeps its
// data across a recreate of api alone; a new revision using a key hostlet
// does not apply is rejected by name and the running version stays;
// removing the project removes its containers and network, keeps its
// volume and leaves the native pod beside it.
func TestComposeProject(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port, apiPort := testkit.FreePort(t), testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "native.yaml"), e.pod("native", "1"))
	project := filepath.Join(tree, "shop")
	// The project's name is the run's own: its network is named after it
	// on an engine other test runs share.
	proj := e.instance
	apiMessage := "from-api"
	composeFile := func(extra string) string {
		return fmt.Sprintf(`name: %s
services:
  web:
    image: %s
    pull_policy: never
    restart: unless-stopped
    stop_grace_period: 1s
    environment:
      MESSAGE: "${GREETING} from ${PLACE:-nowhere}"
    ports: ["127.0.0.1:%d:8080"]
%s  api:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    environment: {MESSAGE: %s}
    ports: ["127.0.0.1:%d:8080"]
    volumes: ["data:/data"]
volumes:
  data: {}
`, proj, e.image, port, extra, e.image, apiMessage, apiPort)
	}
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), composeFile(""))
	testkit.WriteFile(t, filepath.Join(project, ".env"), "GREETING=hello\nPLACE=dotenv\n")
	cfg := e.config(t, fmt.Sprintf("compose:\n  env: {PLACE: host-config}\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)

	before := e.waitPods(t, 60*time.Second, "native", proj+"-api", proj+"-web")
	web := before[2]
	for k, want := range map[string]string{compose.LabelProject: proj, compose.LabelService: "web", compose.LabelContainerNumber: "1", compose.LabelOneoff: "False"} {
		if got := web.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		code, body, err := testkit.HTTP("GET", url, "")
		return err == nil && code == 200 && strings.Contains(body, "MESSAGE=hello from host-config"), fmt.Sprintf("GET %s: %d %q %v", url, code, body, err)
	})
	// web reaches api by its service name on the project's network.
	testkit.WaitHTTP(t, 30*time.Second, "GET", url+"fetch?url=http://api:8080/", "", "MESSAGE=from-api")

	// api's named volume <project>_data keeps what it holds across a
	// recreate of api (a changed environment), and web is left as it is.
	apiURL := fmt.Sprintf("http://127.0.0.1:%d/", apiPort)
	if code, body, err := testkit.HTTP("POST", apiURL+"write?path=/data/note", "kept"); err != nil || code != 200 {
		t.Fatalf("write to the volume: %d %q %v", code, body, err)
	}
	apiMessage = "from-api-v2"
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), composeFile(""))
	testkit.WaitHTTP(t, 60*time.Second, "GET", apiURL, "", "MESSAGE=from-api-v2")
	testkit.WaitHTTP(t, 10*time.Second, "GET", apiURL+"read?path=/data/note", "", "kept")
	// The old api container goes once the new one has started (a
	// recreate removes it late): wait for it to be gone.
	before = e.waitSettled(t, 60*time.Second, 3)
	if before[2].ID != web.ID {
		t.Errorf("web was recreated (%s -> %s) by a change to api", web.ID, before[2].ID)
	}

	// A revision with a key hostlet does not apply: rejected by name, the
	// running container stays.
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), composeFile("    cgroup_parent: /custom\n"))
	seen := time.Now()
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, r := range d.Rejected {
			if r.ID == proj+"-web" && strings.Contains(strings.Join(r.Reasons, ";"), "/shop/compose.yaml: services.web.cgroup_parent: not supported by hostlet yet") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("rejected %+v", d.Rejected)
	})
	t.Logf("rejected: %+v", doc.Rejected)
	a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, seen.Add(1500*time.Millisecond)), fmt.Sprintf("last sync started %s", d.LastSync.Start)
	})
	if after := e.containers(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("containers changed after a rejected revision:\nbefore %+v\nafter  %+v", before, after)
	}

	// The project removed: its containers and its network go, its named
	// volume stays; the native pod stays.
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	e.waitPods(t, 60*time.Second, "native")
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		_, err := e.docker.NetworkInspect(t.Context(), proj+"_default", network.InspectOptions{})
		return cerrdefs.IsNotFound(err), fmt.Sprintf("network %s_default: inspect error %v", proj, err)
	})
	if _, err := e.docker.VolumeInspect(t.Context(), proj+"_data"); err != nil {
		t.Errorf("the named volume %s_data is gone with the project: %v", proj, err)
	}
}

// TestComposeDependsOnHealthy: a service that depends on another's health
// is created only once the engine reports that one healthy, as the
// engine's own timestamps show; /status says why it waits meanwhile.
func TestComposeDependsOnHealthy(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), fmt.Sprintf(`name: %s
services:
  db:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    healthcheck:
      test: ["CMD", "/demo", "probe-ok"]
      interval: 2s
      start_period: 1s
  web:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    depends_on: {db: {condition: service_healthy}}
`, proj, e.image, e.image))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == proj+"-web" && p.Reason == "WaitingForDependency" && strings.Contains(p.Message, "pod "+proj+"-db to be healthy") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pods %+v", d.Pods)
	})
	boxes := e.waitPods(t, 60*time.Second, proj+"-db", proj+"-web")
	db, err := e.docker.ContainerInspect(t.Context(), boxes[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	web, err := e.docker.ContainerInspect(t.Context(), boxes[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if db.State.Health == nil || len(db.State.Health.Log) == 0 {
		t.Fatalf("db has no healthcheck log: %+v", db.State)
	}
	// The engine keeps a healthcheck's last 5 results; until it drops one,
	// the first is the first check. Else no check ends before db's start
	// plus one interval.
	healthy := db.State.Health.Log[0].End
	if len(db.State.Health.Log) >= 5 {
		started, err := time.Parse(time.RFC3339Nano, db.State.StartedAt)
		if err != nil {
			t.Fatal(err)
		}
		healthy = started.Add(2 * time.Second)
	}
	created, err := time.Parse(time.RFC3339Nano, web.Created)
	if err != nil {
		t.Fatal(err)
	}
	if created.Before(healthy) {
		t.Errorf("web was created at %s, before db's first healthcheck passed at %s", created, healthy)
	}
	t.Logf("db's first healthcheck passed at %s; web created at %s", healthy.Format(time.RFC3339Nano), created.Format(time.RFC3339Nano))
	// The status follows once the sync that made web ends (the engine
	// shows web before).
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == proj+"-db" {
				return len(p.Containers) == 1 && p.Containers[0].Healthy, fmt.Sprintf("db status %+v, want its container healthy", p)
			}
		}
		return false, "no status of db"
	})
}

// TestComposeReplicasAndExternalNetwork: a service with replicas is one
// pod per replica; an external network the host's policy lists is joined
// and left in place when the project goes; one it does not list is refused
// by name.
func TestComposeReplicasAndExternalNetwork(t *testing.T) {
	e := newEnv(t)
	proj := e.instance
	ext := proj + "_corp"
	if _, err := e.docker.NetworkCreate(t.Context(), ext, network.CreateOptions{Driver: "bridge"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.docker.NetworkRemove(context.Background(), ext) })
	tree := filepath.Join(e.dir, "tree")
	file := func(external string) string {
		return fmt.Sprintf(`name: %s
services:
  worker:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    command: ["pause"]
    deploy: {replicas: 2}
    networks: [default, corp]
networks:
  corp: {external: true, name: %s}
`, proj, e.image, external)
	}
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), file(ext))
	testkit.WriteFile(t, filepath.Join(tree, "native.yaml"), e.pod("native", "1"))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\npolicy:\n  externalNetworks: [%s]\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), ext, tree))
	a := e.start(t, cfg)
	boxes := e.waitPods(t, 60*time.Second, "native", proj+"-worker-1", proj+"-worker-2")
	for _, b := range boxes[1:] {
		info, err := e.docker.ContainerInspect(t.Context(), b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := info.NetworkSettings.Networks[ext]; !ok {
			t.Errorf("%s is not on %s: %v", b.Pod, ext, slices.Collect(maps.Keys(info.NetworkSettings.Networks)))
		}
		if n := b.Labels[compose.LabelContainerNumber]; n != strings.TrimPrefix(b.Pod, proj+"-worker-") {
			t.Errorf("%s: container-number %q", b.Pod, n)
		}
	}

	// A network the policy does not list: refused by name, the running
	// replicas stay.
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), file(proj+"_other"))
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, r := range d.Rejected {
			if strings.Contains(strings.Join(r.Reasons, ";"), "policy.externalNetworks") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("rejected %+v", d.Rejected)
	})
	if err := os.RemoveAll(filepath.Join(tree, "app")); err != nil {
		t.Fatal(err)
	}
	e.waitPods(t, 60*time.Second, "native")
	if _, err := e.docker.NetworkInspect(t.Context(), ext, network.InspectOptions{}); err != nil {
		t.Errorf("the external network is gone with the project: %v", err)
	}
}

// TestComposeProjectFiles: a relative bind mount, a config and a secret
// are files of the project, mounted read-only with the content of the
// source's revision; editing the bound file recreates only the container
// mounting it, with the file named in the reason; the secret's content is
// never in /status.
func TestComposeProjectFiles(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	port := testkit.FreePort(t)
	project := filepath.Join(tree, "app")
	testkit.WriteFile(t, filepath.Join(project, "compose.yaml"), fmt.Sprintf(`name: %s
services:
  web:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    ports: ["127.0.0.1:%d:8080"]
    volumes: ["./conf/app.conf:/etc/app.conf"]
    configs: [{source: banner, target: /etc/banner}]
    secrets: [token]
  api:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    command: ["pause"]
configs:
  banner: {content: "welcome to ${PLACE}"}
secrets:
  token: {file: ./secrets/token.txt}
`, proj, e.image, port, e.image))
	testkit.WriteFile(t, filepath.Join(project, "conf", "app.conf"), "version one")
	testkit.WriteFile(t, filepath.Join(project, ".env"), "PLACE=the-shop\n")
	const secret = "s3cret-token-value"
	testkit.WriteFile(t, filepath.Join(project, "secrets", "token.txt"), secret)
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)

	before := e.waitPods(t, 60*time.Second, proj+"-api", proj+"-web")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", url+"read?path=/etc/app.conf", "", "version one")
	testkit.WaitHTTP(t, 10*time.Second, "GET", url+"read?path=/etc/banner", "", "welcome to the-shop")
	testkit.WaitHTTP(t, 10*time.Second, "GET", url+"read?path=/run/secrets/token", "", secret)
	// Read-only in the container.
	if code, _, err := testkit.HTTP("POST", url+"write?path=/etc/app.conf", "changed"); err != nil || code == 200 {
		t.Errorf("writing the bound file: %d %v, want a failure", code, err)
	}

	testkit.WriteFile(t, filepath.Join(project, "conf", "app.conf"), "version two")
	testkit.WaitHTTP(t, 60*time.Second, "GET", url+"read?path=/etc/app.conf", "", "version two")
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == proj+"-web" && p.LastAction != nil && strings.Contains(p.LastAction.Reason, "file conf/app.conf changed") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pods %+v", d.Pods)
	})
	after := e.waitSettled(t, 60*time.Second, len(before)) // the recreate's old container gone
	if after[0].ID != before[0].ID {
		t.Errorf("api was recreated (%s -> %s) by a file only web mounts", before[0].ID, after[0].ID)
	}
	if after[1].ID == before[1].ID {
		t.Error("web was not recreated")
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) || strings.Contains(string(raw), base64.StdEncoding.EncodeToString([]byte(secret))) {
		t.Error("/status shows the secret's content")
	}
}

// TestComposeHostAccessPolicy: the keys that reach into the host are
// applied as the engine reports them when the host's policy allows them
// (a capability, a device, the host's network and PID namespaces, limits,
// a sysctl, a log driver, no-new-privileges); a new revision asking for
// more (privileged) is refused naming policy.privileged, and the running
// containers stay.
func TestComposeHostAccessPolicy(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	device := "/dev/zero:/dev/hostlet-zero:r"
	file := func(extra string) string {
		return fmt.Sprintf(`name: %s
services:
  tool:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    command: ["pause"]
    cap_add: [NET_ADMIN]
    cap_drop: [MKNOD]
    devices: [%q]
    security_opt: ["no-new-privileges:true"]
    ulimits: {nofile: {soft: 1024, hard: 2048}}
    sysctls: {net.core.somaxconn: "512"}
    logging: {driver: json-file, options: {max-size: 1m}}
%s  agent:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    command: ["pause"]
    network_mode: host
    pid: host
`, proj, e.image, device, extra, e.image)
	}
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), file(""))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\npolicy:\n  capabilities: [NET_ADMIN]\n  devices: [/dev/zero]\n  hostNetwork: true\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	podman := dockertest.Engine(t).Podman()
	if podman {
		// Podman's compatible API drops a device's cgroup permissions
		// (the device gets rwm): the pod fails naming the setting, and
		// runs once the device asks for no less.
		waitPodReason(t, a, proj+"-tool", "devices[/dev/zero:/dev/hostlet-zero]: asked permissions r")
		device = "/dev/zero:/dev/hostlet-zero"
		testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), file(""))
	}
	boxes := e.waitPods(t, 60*time.Second, proj+"-agent", proj+"-tool")

	agent, err := e.docker.ContainerInspect(t.Context(), boxes[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if !agent.HostConfig.NetworkMode.IsHost() || !agent.HostConfig.PidMode.IsHost() {
		t.Errorf("agent: network mode %q, pid mode %q, want host and host", agent.HostConfig.NetworkMode, agent.HostConfig.PidMode)
	}
	tool, err := e.docker.ContainerInspect(t.Context(), boxes[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	checkHostAccess(t, tool, podman)
	// Asking for more than the policy allows: refused by name, nothing
	// running changes.
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), file("    privileged: true\n"))
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, r := range d.Rejected {
			if r.ID == proj+"-tool" && strings.Contains(strings.Join(r.Reasons, ";"), "services.tool.privileged: a privileged container can take over the host: set the host config's policy.privileged: true") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("rejected %+v", d.Rejected)
	})
	seen := time.Now()
	a.WaitStatus(t, 20*time.Second, func(d api.Document) (bool, string) {
		return syncedSince(d, seen.Add(1500*time.Millisecond)), fmt.Sprintf("last sync started %s", d.LastSync.Start)
	})
	if after := e.containers(t); after[1].ID != boxes[1].ID || after[1].State != "running" {
		t.Errorf("tool changed after a refused revision: %+v -> %+v", boxes[1], after[1])
	}
}

// TestComposeIPAM: a project network with a subnet, gateway and range is
// made with them, and a service's ipv4_address is its address there; a
// peer reaches it at that address.
func TestComposeIPAM(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	// A /24 of its own per run: the engine refuses overlapping subnets.
	sum := sha256.Sum256([]byte(proj))
	subnet := fmt.Sprintf("10.%d.%d.0/24", 200+int(sum[0])%50, sum[1])
	prefix := strings.TrimSuffix(subnet, "0/24")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), fmt.Sprintf(`name: %s
services:
  fixed:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    environment: {MESSAGE: fixed}
    networks: {lan: {ipv4_address: %s53}}
  web:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    ports: ["127.0.0.1:%d:8080"]
    networks: [lan]
networks:
  lan:
    ipam:
      config: [{subnet: %s, gateway: %s1, ip_range: %s128/25}]
`, proj, e.image, prefix, e.image, port, subnet, prefix, prefix))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	e.start(t, cfg)
	boxes := e.waitPods(t, 60*time.Second, proj+"-fixed", proj+"-web")

	net, err := e.docker.NetworkInspect(t.Context(), proj+"_lan", network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Podman never reports a network's IP range: web's address, given
	// by the engine, shows it holds.
	ipRange := prefix + "128/25"
	if dockertest.Engine(t).Podman() && len(net.IPAM.Config) == 1 && net.IPAM.Config[0].IPRange == "" {
		ipRange = ""
	}
	if len(net.IPAM.Config) != 1 || net.IPAM.Config[0].Subnet != subnet || net.IPAM.Config[0].Gateway != prefix+"1" || net.IPAM.Config[0].IPRange != ipRange {
		t.Errorf("network IPAM %+v, want subnet %s gateway %s1 range %s128/25", net.IPAM.Config, subnet, prefix, prefix)
	}
	web, err := e.docker.ContainerInspect(t.Context(), boxes[1].ID)
	if err != nil {
		t.Fatal(err)
	}
	if ep := web.NetworkSettings.Networks[proj+"_lan"]; ep == nil || !netip.MustParsePrefix(prefix+"128/25").Contains(netip.MustParseAddr(cmp.Or(ep.IPAddress, "0.0.0.0"))) {
		t.Errorf("web's endpoint %+v, want an address in the range %s128/25", ep, prefix)
	}
	info, err := e.docker.ContainerInspect(t.Context(), boxes[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if ep := info.NetworkSettings.Networks[proj+"_lan"]; ep == nil || ep.IPAddress != prefix+"53" {
		t.Errorf("fixed's endpoint %+v, want address %s53", ep, prefix)
	}
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://%s53:8080/", port, prefix), "", "MESSAGE=fixed")
}

// TestComposeIPv6AndBridgeOptions: a dual-stack project network (both
// pools) with a bridge name of its own is made so, a service's
// ipv6_address is its IPv6 address there, and a peer reaches it over
// IPv6 at that address.
func TestComposeIPv6AndBridgeOptions(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	// Pools and a bridge name of their own per run: the engine refuses
	// overlapping subnets and a second bridge of one name.
	sum := sha256.Sum256([]byte("ipv6 " + proj))
	subnet := fmt.Sprintf("10.%d.%d.0/24", 150+int(sum[0])%50, sum[1])
	prefix := strings.TrimSuffix(subnet, "0/24")
	// In its one written form (no leading zeros), as engines report it.
	subnet6 := netip.MustParsePrefix(fmt.Sprintf("fd%02x:%02x%02x:%02x%02x::/64", sum[2], sum[3], sum[4], sum[5], sum[6])).String()
	addr6 := netip.MustParsePrefix(subnet6).Addr().Next().Next().Next().String()
	bridge := fmt.Sprintf("hl%x", sum[7:11])
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), fmt.Sprintf(`name: %s
services:
  fixed:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    environment: {MESSAGE: fixed6}
    networks: {wg: {ipv4_address: %s53, ipv6_address: "%s"}}
  web:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    ports: ["127.0.0.1:%d:8080"]
    networks: [wg]
networks:
  wg:
    driver: bridge
    enable_ipv6: true
    driver_opts:
      com.docker.network.bridge.name: %s
      com.docker.network.driver.mtu: "1400"
    ipam:
      config: [{subnet: %s}, {subnet: "%s"}]
`, proj, e.image, prefix, addr6, e.image, port, bridge, subnet, subnet6))
	cfg := e.config(t, fmt.Sprintf("policy: {hostNetwork: true}\ncompose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	e.start(t, cfg)
	boxes := e.waitPods(t, 60*time.Second, proj+"-fixed", proj+"-web")

	net, err := e.docker.NetworkInspect(t.Context(), proj+"_wg", network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []string
	for _, c := range net.IPAM.Config {
		subnets = append(subnets, c.Subnet)
	}
	if slices.Sort(subnets); !net.EnableIPv6 || !slices.Equal(subnets, []string{subnet, subnet6}) {
		t.Errorf("network enableIPv6 %v, subnets %q, want true, [%s %s]", net.EnableIPv6, subnets, subnet, subnet6)
	}
	if iface, err := stdnet.InterfaceByName(bridge); err != nil || iface.MTU != 1400 && !dockertest.Engine(t).Podman() {
		t.Errorf("the host's bridge %s: %+v, %v; want it, with MTU 1400", bridge, iface, err)
	}
	info, err := e.docker.ContainerInspect(t.Context(), boxes[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if ep := info.NetworkSettings.Networks[proj+"_wg"]; ep == nil || ep.IPAddress != prefix+"53" || ep.GlobalIPv6Address != addr6 {
		t.Errorf("fixed's endpoint %+v, want addresses %s53 and %s", ep, prefix, addr6)
	}
	testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://[%s]:8080/", port, addr6), "", "MESSAGE=fixed6")
}

// TestComposeNetworkOfService: a service with network_mode: service:vpn
// runs in vpn's network namespace (reached through vpn's published port
// on 127.0.0.1), and is moved into the new one when vpn is recreated and
// when vpn's container is restarted behind hostlet's back, while it runs
// or while it is down.
func TestComposeNetworkOfService(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	proj := e.instance
	port := testkit.FreePort(t)
	write := func(vpnMessage string) {
		testkit.WriteFile(t, filepath.Join(tree, "app", "compose.yaml"), fmt.Sprintf(`name: %s
services:
  vpn:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    environment: {MESSAGE: %s}
    ports: ["127.0.0.1:%d:8080"]
  torrent:
    image: %s
    pull_policy: never
    stop_grace_period: 1s
    environment: {MESSAGE: torrent, LISTEN: ":8081"}
    network_mode: service:vpn
`, proj, e.image, vpnMessage, port, e.image))
	}
	write("vpn1")
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	agent := e.start(t, cfg)
	joined := func(want string) {
		t.Helper()
		var boxes []box
		testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
			boxes = e.waitPods(t, 60*time.Second, proj+"-torrent", proj+"-vpn")
			info, err := e.docker.ContainerInspect(t.Context(), boxes[0].ID)
			if err != nil {
				return false, err.Error()
			}
			vpn, err := e.docker.ContainerInspect(t.Context(), boxes[1].ID)
			if err != nil {
				return false, err.Error()
			}
			// Podman names the container joined, Docker gives its ID.
			mode := string(info.HostConfig.NetworkMode)
			ok := mode == "container:"+vpn.ID || mode == "container:"+strings.TrimPrefix(vpn.Name, "/")
			began, _ := time.Parse(time.RFC3339Nano, info.State.StartedAt)
			vpnBegan, _ := time.Parse(time.RFC3339Nano, vpn.State.StartedAt)
			ok = ok && info.State.Running && !began.Before(vpnBegan)
			return ok, fmt.Sprintf("torrent's network mode %s started %s, vpn %s started %s", mode, info.State.StartedAt, vpn.ID, vpn.State.StartedAt)
		})
		testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/fetch?url=http://127.0.0.1:8081/", port), "", "MESSAGE=torrent")
		testkit.WaitHTTP(t, 30*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", port), "", "MESSAGE="+want)
	}
	joined("vpn1")

	// vpn recreated: torrent follows it into its new namespace.
	write("vpn2")
	joined("vpn2")

	// vpn's container restarted by hand: torrent rejoins it.
	boxes := e.waitPods(t, 30*time.Second, proj+"-torrent", proj+"-vpn")
	timeout := 1
	if err := e.docker.ContainerRestart(t.Context(), boxes[1].ID, container.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	joined("vpn2")

	// And while hostlet was down: the next hostlet finds torrent older
	// than the namespace it should be in.
	agent.Stop()
	if err := e.docker.ContainerRestart(t.Context(), boxes[1].ID, container.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	e.start(t, cfg)
	joined("vpn2")
}

// netnsSysctl reads a sysctl (its path under /proc/sys) in the network
// namespace of process pid (a container's).
func netnsSysctl(t *testing.T, pid int, name string) string {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-n", "cat", "/proc/sys/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("read %s in the network namespace of process %d: %v: %s", name, pid, err, out)
	}
	return strings.TrimSpace(string(out))
}

// checkHostAccess checks what TestComposeHostAccessPolicy's tool service
// asked of the host, as the engine reports it and as its process has it
// (/proc/<pid>/status, its network namespace's /proc/sys): Podman's
// compatible inspect spells capabilities without CAP_, shows no drop of
// a capability its default set lacks (MKNOD), no device permissions,
// sysctls or log options, and no-new-privileges without "=true".
func checkHostAccess(t *testing.T, tool container.InspectResponse, podman bool) {
	t.Helper()
	hc := tool.HostConfig
	// Docker spells them CAP_NET_ADMIN (API 1.41 and later).
	if !podman && (!slices.Contains(hc.CapAdd, "CAP_NET_ADMIN") || !slices.Contains(hc.CapDrop, "CAP_MKNOD")) || hc.Privileged {
		t.Errorf("tool: capAdd %v capDrop %v privileged %v", hc.CapAdd, hc.CapDrop, hc.Privileged)
	}
	const capNetAdmin, capMknod = 12, 27
	if caps := procStatusField(t, tool.State.Pid, "CapEff"); caps&(1<<capNetAdmin) == 0 || caps&(1<<capMknod) != 0 {
		t.Errorf("tool: effective capabilities %#x, want NET_ADMIN and not MKNOD", caps)
	}
	wantPerm := "r"
	if podman {
		wantPerm = ""
	}
	if len(hc.Devices) != 1 || hc.Devices[0].PathOnHost != "/dev/zero" || hc.Devices[0].PathInContainer != "/dev/hostlet-zero" || hc.Devices[0].CgroupPermissions != wantPerm {
		t.Errorf("tool: devices %+v", hc.Devices)
	}
	if !podman && !slices.Contains(hc.SecurityOpt, "no-new-privileges=true") {
		t.Errorf("tool: security options %v", hc.SecurityOpt)
	}
	if procStatusField(t, tool.State.Pid, "NoNewPrivs") != 1 {
		t.Errorf("tool: its process may gain privileges (NoNewPrivs 0)")
	}
	// Podman spells it RLIMIT_NOFILE and adds its default RLIMIT_NPROC.
	nofile := slices.IndexFunc(hc.Ulimits, func(u *container.Ulimit) bool { return hruntime.UlimitName(u.Name) == "nofile" })
	if nofile < 0 || hc.Ulimits[nofile].Soft != 1024 || hc.Ulimits[nofile].Hard != 2048 || len(hc.Ulimits) != 1 && !podman {
		t.Errorf("tool: ulimits %+v", hc.Ulimits)
	}
	if hc.Sysctls["net.core.somaxconn"] != "512" && !podman {
		t.Errorf("tool: sysctls %v", hc.Sysctls)
	}
	if got := netnsSysctl(t, tool.State.Pid, "net/core/somaxconn"); got != "512" {
		t.Errorf("tool: net.core.somaxconn in its network namespace is %q, want 512", got)
	}
	if !podman && (hc.LogConfig.Type != "json-file" || hc.LogConfig.Config["max-size"] != "1m") {
		t.Errorf("tool: log config %+v", hc.LogConfig)
	}
}

// procStatusField reads a number of /proc/<pid>/status (hex for the
// capability sets, decimal otherwise).
func procStatusField(t *testing.T, pid int, field string) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			base := 10
			if strings.HasPrefix(field, "Cap") {
				base = 16
			}
			n, err := strconv.ParseUint(strings.TrimSpace(v), base, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status %s: %v", pid, field, err)
			}
			return n
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// waitPodReason waits until pod's status message holds want.
func waitPodReason(t *testing.T, a *agenttest.Agent, pod, want string) {
	t.Helper()
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == pod && strings.Contains(p.Message, want) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pods %+v, want %s failing with %q", d.Pods, pod, want)
	})
}
