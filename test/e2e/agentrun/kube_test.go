package agentrun_test

import (
	"context"
	"errors"
	"fmt"
	stdnet "net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// kubeObjects are the Kubernetes objects of TestKubernetesManifests: a
// ConfigMap mounted as files and read as env by a Pod publishing a host
// port, a Secret as env, a Deployment of 3 replicas reading another
// ConfigMap, and two Pods with a nodeSelector, one of them for other
// hosts.
func (e *env) kubeObjects(port int, conf string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: reader-conf}
data:
  app.conf: %q
  greeting: hello
---
apiVersion: v1
kind: ConfigMap
metadata: {name: worker-conf}
data: {mode: steady}
---
apiVersion: v1
kind: Secret
metadata: {name: reader-secret}
stringData: {token: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: reader, labels: {app: reader}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %[3]d, hostIP: 127.0.0.1}]
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: reader-conf, key: greeting}}
    - name: TOKEN
      valueFrom: {secretKeyRef: {name: reader-secret, key: token}}
    - name: POD
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    volumeMounts:
    - {name: conf, mountPath: /etc/reader}
  volumes:
  - name: conf
    configMap: {name: reader-conf}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: workers}
spec:
  replicas: 3
  selector: {matchLabels: {app: workers}}
  template:
    metadata: {labels: {app: workers}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: %[2]s
        imagePullPolicy: Never
        args: [pause]
        command: [/demo]
        envFrom:
        - configMapRef: {name: worker-conf}
---
apiVersion: v1
kind: Pod
metadata: {name: here}
spec:
  nodeSelector: {role: web, kubernetes.io/hostname: test-host}
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %[2]s, imagePullPolicy: Never, command: [/demo, pause]}
---
apiVersion: v1
kind: Pod
metadata: {name: elsewhere}
spec:
  nodeSelector: {role: db}
  terminationGracePeriodSeconds: 1
  containers:
  - {name: app, image: %[2]s, imagePullPolicy: Never, command: [/demo, pause]}
`, conf, e.image, port)
}

// TestKubernetesManifests runs Kubernetes objects from a file source on
// the real engine: a ConfigMap reaches its pod as files and as env, a
// Secret as env, the downward API the pod's name; a Deployment of 3
// replicas runs 3 pods; a pod whose nodeSelector this host matches runs,
// the other does not, and the status says which object each pod comes
// from. Editing one ConfigMap key recreates the pod that uses it and no
// other.
func TestKubernetesManifests(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "objects.yaml"), e.kubeObjects(port, "v1"))
	cfg := e.config(t, fmt.Sprintf("labels: {role: web}\ncompose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)

	before := e.waitPods(t, 60*time.Second, "here", "reader", "workers-1", "workers-2", "workers-3")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", url+"read?path=/etc/reader/app.conf", "", "v1")
	for name, want := range map[string]string{"GREETING": "hello", "TOKEN": "s3cret", "POD": "reader"} {
		testkit.WaitHTTP(t, 10*time.Second, "GET", url+"env?name="+name, "", want)
	}
	doc := a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == "workers-2" && p.Manifest != nil && p.Manifest.Object != nil {
				o := p.Manifest.Object
				return o.Kind == "Deployment" && o.Name == "workers", fmt.Sprintf("workers-2 from %+v", o)
			}
		}
		return false, "no workers-2 with its object in /status"
	})
	for _, p := range doc.Pods {
		if p.ID == "elsewhere" {
			t.Errorf("pod elsewhere (nodeSelector role=db) is in the status of a role=web host: %+v", p)
		}
	}

	// One key of reader-conf changes: reader is recreated, the workers
	// (another ConfigMap) and here are left as they run.
	testkit.WriteFile(t, filepath.Join(tree, "objects.yaml"), e.kubeObjects(port, "v2"))
	testkit.WaitHTTP(t, 60*time.Second, "GET", url+"read?path=/etc/reader/app.conf", "", "v2")
	after := e.waitSettled(t, 60*time.Second, 5)
	for i, b := range after {
		switch {
		case b.Pod != before[i].Pod:
			t.Fatalf("pods %v, want %v", runningPods(after), runningPods(before))
		case b.Pod == "reader" && b.ID == before[i].ID:
			t.Errorf("reader was not recreated by a change to its ConfigMap's key")
		case b.Pod != "reader" && b.ID != before[i].ID:
			t.Errorf("pod %s was recreated by a change to a ConfigMap it does not use", b.Pod)
		}
	}
	if !slices.ContainsFunc(after, func(b box) bool { return b.Pod == "reader" && strings.HasPrefix(b.State, "running") }) {
		t.Errorf("reader is not running after the change: %+v", after)
	}
}

// TestKubernetesStartupProbeHoldsLiveness: a liveness probe that fails
// at once does not restart a container whose startup probe has not
// passed; once it passes, the liveness probe runs and restarts it.
func TestKubernetesStartupProbeHoldsLiveness(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "slow.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: slow}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
    startupProbe:
      httpGet: {path: "/read?path=/tmp/started", port: 8080}
      periodSeconds: 1
      failureThreshold: 600
    livenessProbe:
      httpGet: {path: "/read?path=/tmp/alive", port: 8080}
      periodSeconds: 1
      failureThreshold: 1
`, e.image, port))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "slow")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", url, "", "hello")

	restarts := func(d api.Document) (int, bool) {
		for _, p := range d.Pods {
			if p.ID == "slow" && len(p.Containers) == 1 {
				return p.Containers[0].Restarts, true
			}
		}
		return 0, false
	}
	// The liveness probe (every second, failing at once) would have
	// restarted the container within 2 s: 4 s after the start, none.
	var started time.Time
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == "slow" && len(p.Containers) == 1 && started.IsZero() {
				started, _ = time.Parse(time.RFC3339Nano, p.Containers[0].StartedAt)
			}
		}
		n, ok := restarts(d)
		if ok && n > 0 {
			t.Fatalf("the container was restarted %d times before its startup probe passed", n)
		}
		return ok && !started.IsZero() && time.Since(started) > 4*time.Second, fmt.Sprintf("slow started at %v", started)
	})
	// The startup probe passes: the liveness probe runs, fails and
	// restarts the container.
	if code, body, err := testkit.HTTP("POST", url+"write?path=/tmp/started", "yes"); err != nil || code != 200 {
		t.Fatalf("write /tmp/started: %d %q %v", code, body, err)
	}
	a.WaitStatus(t, 30*time.Second, func(d api.Document) (bool, string) {
		n, _ := restarts(d)
		return n > 0, fmt.Sprintf("%d restarts after the startup probe passed", n)
	})
}

// hookServer is a server of the test on the engine's default bridge
// (where a container reaches the host), recording the paths asked for:
// its URL now, and start, which listens (Podman makes the bridge's
// interface only for its first container: before it, on every address).
func hookServer(t *testing.T, e *env) (url string, start func(), asked <-chan string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nw, err := e.docker.NetworkInspect(ctx, "bridge", network.InspectOptions{})
	if err != nil || len(nw.IPAM.Config) == 0 {
		t.Fatalf("the default bridge's address pool: %v %+v", err, nw.IPAM)
	}
	gateway := nw.IPAM.Config[0].Gateway
	if gateway == "" {
		// Docker 20.10 leaves it out when the bridge's interface was
		// there before the engine started: the host's address in the
		// subnet is the gateway.
		gateway = hostAddressIn(t, nw.IPAM.Config[0].Subnet)
	}
	addr := stdnet.JoinHostPort(gateway, strconv.Itoa(testkit.FreePort(t)))
	ch := make(chan string, 16)
	start = func() {
		t.Helper()
		ln, err := stdnet.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRNOTAVAIL) {
			// Podman's bridge has no interface before its first
			// container: every address of the host, the bridge's to be.
			_, port, _ := stdnet.SplitHostPort(addr)
			ln, err = stdnet.Listen("tcp", ":"+port)
		}
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case ch <- r.URL.Path:
			default:
			}
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	return "http://" + addr, start, ch
}

// hostAddressIn is an address of this host's interfaces within subnet.
func hostAddressIn(t *testing.T, subnet string) string {
	t.Helper()
	pool, err := netip.ParsePrefix(subnet)
	if err != nil {
		t.Fatalf("the default bridge's subnet %q: %v", subnet, err)
	}
	addrs, err := stdnet.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && pool.Contains(p.Addr()) {
			return p.Addr().String()
		}
	}
	t.Fatalf("no address of this host in the default bridge's subnet %s (%v)", subnet, addrs)
	return ""
}

// TestKubernetesLifecycleHooks: a pod's preStop hook runs before hostlet
// stops it, seen from outside (the hook makes the container call a server
// of the test, which only a running container can); a postStart hook that
// fails fails its pod, saying so.
func TestKubernetesLifecycleHooks(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	hooks, startHooks, asked := hookServer(t, e)
	testkit.WriteFile(t, filepath.Join(tree, "hooked.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hooked}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: Never
    ports: [{name: http, containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
    lifecycle:
      postStart:
        exec: {command: [/demo, probe-ok]}
      preStop:
        httpGet: {path: "/fetch?url=%[3]s/prestop", port: http}
`, e.image, port, hooks))
	testkit.WriteFile(t, filepath.Join(tree, "failing.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: failing}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    command: [/demo, pause]
    lifecycle:
      postStart:
        exec: {command: [/demo, probe-fail]}
`, e.image))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	testkit.WaitHTTP(t, 60*time.Second, "GET", fmt.Sprintf("http://127.0.0.1:%d/", port), "", "hello")
	startHooks()
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == "failing" {
				return strings.Contains(p.Message, "postStart hook failed: exec /demo exited with 1"), fmt.Sprintf("failing: %s %s", p.Phase, p.Message)
			}
		}
		return false, "no pod failing in the status"
	})

	// The pod leaves its source: hostlet stops it, its preStop hook first.
	if err := os.Remove(filepath.Join(tree, "hooked.yaml")); err != nil {
		t.Fatal(err)
	}
	select {
	case path := <-asked:
		if path != "/prestop" {
			t.Errorf("the hook asked for %s, want /prestop", path)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the preStop hook never reached the test's server")
	}
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		return !slices.Contains(runningPods(e.containers(t)), "hooked"), "pod hooked still runs"
	})
}

// initObjects are the objects of TestKubernetesInitContainers: a Pod
// whose init containers write, into an emptyDir, a file its app serves
// (the second one from a ConfigMap key, greeting), and a Pod whose init
// container fails.
func (e *env) initObjects(port int, greeting string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: init-conf}
data: {greeting: %q}
---
apiVersion: v1
kind: Pod
metadata: {name: served}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: first
    image: %[2]s
    imagePullPolicy: Never
    command: [/demo, write, /work/first.txt, "first ran"]
    volumeMounts: [{name: work, mountPath: /work}]
  - name: second
    image: %[2]s
    imagePullPolicy: Never
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: init-conf, key: greeting}}
    command: [/demo, write, /work/index.txt, "$(GREETING) from init"]
    volumeMounts: [{name: work, mountPath: /work}]
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %[3]d, hostIP: 127.0.0.1}]
    volumeMounts: [{name: work, mountPath: /work, readOnly: true}]
  volumes:
  - {name: work, emptyDir: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: broken}
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: check
    image: %[2]s
    imagePullPolicy: Never
    command: [/demo, probe-fail]
  containers:
  - name: app
    image: %[2]s
    imagePullPolicy: Never
    command: [/demo, pause]
`, greeting, e.image, port)
}

// TestKubernetesInitContainers: init containers run in order, each to
// completion, before the app container starts, which serves what they
// wrote; a change to the ConfigMap one of them reads runs them again
// before the new app container; one that fails fails its pod with its
// exit code and no app container is made.
func TestKubernetesInitContainers(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "objects.yaml"), e.initObjects(port, "hello"))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)

	e.waitPods(t, 60*time.Second, "served", "broken")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, "GET", url+"read?path=/work/index.txt", "", "hello from init")
	testkit.WaitHTTP(t, 10*time.Second, "GET", url+"read?path=/work/first.txt", "", "first ran")
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == "broken" {
				return p.Phase == "Failed" && p.Reason == "InitContainerFailed" && strings.Contains(p.Message, "init container check exited with code 1"),
					fmt.Sprintf("broken: %s %s %q", p.Phase, p.Reason, p.Message)
			}
		}
		return false, "no pod broken in /status"
	})
	for _, b := range e.containers(t) {
		slot := b.Labels["io.hostlet.container"]
		switch {
		case b.Pod == "broken" && slot == "app":
			t.Errorf("pod broken has an app container although its init container failed: %+v", b)
		case b.Pod == "served" && strings.HasPrefix(slot, "init.") && b.State != "exited":
			t.Errorf("init container %s of served is %s, want exited", slot, b.State)
		}
	}

	// The ConfigMap key the second init container reads changes: the
	// init containers run again before the new app container starts.
	testkit.WriteFile(t, filepath.Join(tree, "objects.yaml"), e.initObjects(port, "hi"))
	testkit.WaitHTTP(t, 60*time.Second, "GET", url+"read?path=/work/index.txt", "", "hi from init")
}

// webDeployment is a Deployment of one replica whose readiness probe
// gates its rollout; extra holds more fields of its container (indented
// for it), "" none.
func (e *env) webDeployment(port int, version, extra string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  minReadySeconds: 2
  progressDeadlineSeconds: 120
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, version: %q}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: app
        image: %s
        imagePullPolicy: Never
        ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
        readinessProbe:
          httpGet: {path: /healthz, port: 8080}
          periodSeconds: 1
%s`, version, e.image, port, extra)
}

// TestKubernetesDeploymentRollsBackOnCrash: a Deployment's new version
// that crashes is rolled back to the last version its readiness probe
// passed, which serves again.
func TestKubernetesDeploymentRollsBackOnCrash(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "web.yaml"), e.webDeployment(port, "1", ""))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	goodPod := rollout(waitRollout(t, a, 90*time.Second, "web-1", hsync.RolloutComplete, ""), "web-1").Hash
	good := e.app(t, "web-1").Labels[hruntime.LabelHash]
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url, "", "hello from")

	// The bad version: the server exits 300 ms after it starts.
	testkit.WriteFile(t, filepath.Join(tree, "web.yaml"), e.webDeployment(port, "2", "        env: [{name: EXIT_AFTER, value: 300ms}]\n"))
	r := rollout(waitRollout(t, a, 90*time.Second, "web-1", hsync.RolloutRolledBack, ""), "web-1")
	if r.PreviousHash != goodPod || r.Hash == goodPod {
		t.Fatalf("rolled back: %+v, want from a new version to %s", *r, goodPod)
	}
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		c := e.app(t, "web-1")
		return c.Labels[hruntime.LabelHash] == good && c.State == "running", fmt.Sprintf("web-1: hash %s %s, want %s running", c.Labels[hruntime.LabelHash], c.State, good)
	})
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url, "", "hello from")
}

// TestKubernetesGRPCProbes: gRPC probes ask a container's health service
// (the demo's, over HTTP/2 without TLS): a SERVING server is ready, an
// unknown service never is, and a liveness probe that finds the server
// NOT_SERVING restarts the container.
func TestKubernetesGRPCProbes(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	pod := func(name, probes string, hostPort int) string {
		ports := ""
		if hostPort != 0 {
			ports = fmt.Sprintf("    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]\n", hostPort)
		}
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    env: [{name: GRPC_LISTEN, value: \":9090\"}]\n%s%s",
			name, e.image, ports, probes)
	}
	testkit.WriteFile(t, filepath.Join(tree, "pods.yaml"), pod("serving", "    readinessProbe: {grpc: {port: 9090}, periodSeconds: 1}\n", 0)+"---\n"+
		pod("unknown", "    readinessProbe: {grpc: {port: 9090, service: unknown}, periodSeconds: 1}\n", 0)+"---\n"+
		pod("sick", "    livenessProbe: {grpc: {port: 9090}, periodSeconds: 1, failureThreshold: 2}\n", port))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	e.waitPods(t, 60*time.Second, "serving", "unknown", "sick")
	container := func(d api.Document, id string) (hsync.ContainerStatus, bool) {
		for _, p := range d.Pods {
			if p.ID == id && len(p.Containers) == 1 {
				return p.Containers[0], true
			}
		}
		return hsync.ContainerStatus{}, false
	}
	// A new pod's rollout completes once it is ready (minReadySeconds,
	// 10 s by default): serving's does, unknown's goes on waiting.
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		s, u := rollout(d, "serving"), rollout(d, "unknown")
		return s != nil && u != nil && s.State == hsync.RolloutComplete && u.State == hsync.RolloutProgressing,
			fmt.Sprintf("rollouts: serving %+v, unknown %+v", s, u)
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url, "", "hello from")
	if code, body, err := testkit.HTTP(http.MethodPost, url+"unhealthy", ""); err != nil || code != http.StatusOK {
		t.Fatalf("POST /unhealthy: %d %q %v", code, body, err)
	}
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		c, _ := container(d, "sick")
		return c.Restarts > 0, fmt.Sprintf("sick: %d restarts (%s)", c.Restarts, c.LastError)
	})
}

// TestKubernetesRunAsNonRootChecksTheImage: runAsNonRoot without
// runAsUser checks the image's USER when the container is created: the
// test image names none (root), so its pod fails saying why; with
// runAsUser the pod runs as that user.
func TestKubernetesRunAsNonRootChecksTheImage(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	pod := func(name, sc string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  terminationGracePeriodSeconds: 1\n  securityContext: %s\n  containers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    command: [/demo, pause]\n", name, sc, e.image)
	}
	testkit.WriteFile(t, filepath.Join(tree, "pods.yaml"), pod("rooted", "{runAsNonRoot: true}")+"---\n"+pod("user", "{runAsNonRoot: true, runAsUser: 1000}"))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		r, u := podStatus(d, "rooted"), podStatus(d, "user")
		return r.Phase == "Failed" && strings.Contains(r.Message, "runAsNonRoot, but image "+e.image+" runs as root") && u.Phase == "Running",
			fmt.Sprintf("rooted %s %q; user %s", r.Phase, r.Message, u.Phase)
	})
	if b := e.app(t, "rooted"); b.ID != "" {
		t.Errorf("pod rooted has a container: %+v", b)
	}
}

// TestKubernetesPreStopRunsBeforeAProbeRestart: a container its liveness
// probe restarts has its preStop hook run first, seen from outside.
func TestKubernetesPreStopRunsBeforeAProbeRestart(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	hooks, startHooks, asked := hookServer(t, e)
	testkit.WriteFile(t, filepath.Join(tree, "sick.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: sick}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: Never
    ports: [{name: http, containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
    livenessProbe:
      httpGet: {path: /healthz, port: http}
      periodSeconds: 1
      failureThreshold: 2
    lifecycle:
      preStop:
        httpGet: {path: "/fetch?url=%[3]s/before-restart", port: http}
`, e.image, port, hooks))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 60*time.Second, "GET", url, "", "hello")
	startHooks()
	if code, body, err := testkit.HTTP(http.MethodPost, url+"unhealthy", ""); err != nil || code != http.StatusOK {
		t.Fatalf("POST /unhealthy: %d %q %v", code, body, err)
	}
	select {
	case path := <-asked:
		if path != "/before-restart" {
			t.Errorf("the hook asked for %s, want /before-restart", path)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the preStop hook never reached the test's server before the probe's restart")
	}
	a.WaitStatus(t, 60*time.Second, func(d api.Document) (bool, string) {
		for _, p := range d.Pods {
			if p.ID == "sick" && len(p.Containers) == 1 {
				return p.Containers[0].Restarts > 0, fmt.Sprintf("sick: %d restarts", p.Containers[0].Restarts)
			}
		}
		return false, "no pod sick"
	})
}

// TestKubernetesPodAddressesAndPostStartHTTP: a pod of one container reads
// its own address and the host's (fieldRef status.podIP, status.hostIP,
// and a $(VAR) reference to one) from its env, its address being the
// infra container's it gets; its postStart httpGet reaches it once it
// listens (seen from outside: the hook makes the container call a server
// of the test).
func TestKubernetesPodAddressesAndPostStartHTTP(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	hooks, startHooks, asked := hookServer(t, e)
	startHooks()
	testkit.WriteFile(t, filepath.Join(tree, "addressed.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: addressed}
spec:
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: Never
    ports: [{name: http, containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: HOST_IP
      valueFrom: {fieldRef: {fieldPath: status.hostIP}}
    - name: ADVERTISE
      value: "http://$(POD_IP):8080"
    lifecycle:
      postStart:
        httpGet: {path: "/fetch?url=%[3]s/poststart", port: http}
`, e.image, port, hooks))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	e.start(t, cfg)
	select {
	case path := <-asked:
		if path != "/poststart" {
			t.Errorf("the hook asked for %s, want /poststart", path)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the postStart hook never reached the test's server")
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	podIP := testkit.WaitHTTP(t, 60*time.Second, "GET", base+"/env?name=POD_IP", "", "")

	infraIP := ""
	for _, b := range e.containers(t) {
		if b.Pod == "addressed" && b.Labels[hruntime.LabelContainer] == hruntime.InfraName {
			info, err := e.docker.ContainerInspect(t.Context(), b.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range info.NetworkSettings.Networks {
				infraIP = ep.IPAddress
			}
		}
	}
	if infraIP == "" || podIP != infraIP {
		t.Errorf("POD_IP = %q, want the infra container's address %q", podIP, infraIP)
	}
	hostIP, err := hsync.DefaultRouteAddress(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := testkit.WaitHTTP(t, 10*time.Second, "GET", base+"/env?name=HOST_IP", "", ""); got != hostIP {
		t.Errorf("HOST_IP = %q, want the host's default route address %q", got, hostIP)
	}
	if got := testkit.WaitHTTP(t, 10*time.Second, "GET", base+"/env?name=ADVERTISE", "", ""); got != "http://"+infraIP+":8080" {
		t.Errorf("ADVERTISE = %q, want the pod's address in it", got)
	}
}

// TestKubernetesAContainerReadingThePodAddressFollowsANewOne: the engine
// restarts a pod's infra and app containers in order (a reboot, a dockerd
// restart) while hostlet is down, and another container took the pod's
// old address meanwhile: the app container reading status.podIP is
// created anew with the pod's new address.
func TestKubernetesAContainerReadingThePodAddressFollowsANewOne(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	testkit.WriteFile(t, filepath.Join(tree, "addressed.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: addressed}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %[1]s
    imagePullPolicy: Never
    ports: [{name: http, containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
`, e.image, port))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	a := e.start(t, cfg)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	podIP := testkit.WaitHTTP(t, 60*time.Second, "GET", base+"/env?name=POD_IP", "", "")
	var infraID, appID, netName string
	for _, b := range e.containers(t) {
		if b.Pod != "addressed" {
			continue
		}
		if b.Labels[hruntime.LabelContainer] == hruntime.InfraName {
			infraID = b.ID
		} else {
			appID = b.ID
		}
	}
	info, err := e.docker.ContainerInspect(t.Context(), infraID)
	if err != nil {
		t.Fatal(err)
	}
	for name := range info.NetworkSettings.Networks {
		netName = name
	}
	if podIP != info.NetworkSettings.Networks[netName].IPAddress {
		t.Fatalf("POD_IP %s, want the infra container's address", podIP)
	}
	a.Stop()

	// The "reboot": both stop; meanwhile another container takes the
	// freed address; the engine starts the infra container, then the app.
	ctx := t.Context()
	one := 1
	for _, id := range []string{appID, infraID} {
		if err := e.docker.ContainerStop(ctx, id, container.StopOptions{Timeout: &one}); err != nil {
			t.Fatal(err)
		}
	}
	filler, err := e.docker.ContainerCreate(ctx, &container.Config{Image: e.image, Cmd: []string{"/demo", "pause"}}, &container.HostConfig{},
		&network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{netName: {}}}, nil, e.instance+"-filler")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.docker.ContainerRemove(context.Background(), filler.ID, container.RemoveOptions{Force: true})
	})
	if err := e.docker.ContainerStart(ctx, filler.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{infraID, appID} {
		if err := e.docker.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ii, err := e.docker.ContainerInspect(ctx, infraID)
	if err != nil {
		t.Fatal(err)
	}
	now := ii.NetworkSettings.Networks[netName].IPAddress
	if now == podIP {
		t.Fatalf("the infra container has its old address %s again, though another container took it", now)
	}

	e.start(t, cfg)
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		_, got, err := testkit.HTTP("GET", base+"/env?name=POD_IP", "")
		return err == nil && got == now, fmt.Sprintf("POD_IP %q (err %v), want the pod's new address %s", got, err, now)
	})
}
