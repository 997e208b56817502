package manifest_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/hashes.txt (never for a released hash version)")

// baseYAML is the manifest the hash properties start from: two containers,
// one of them using every hashed field.
const baseYAML = `
version: v1beta1
id: web
labels: {team: shop, tier: frontend}
volumes:
  - name: data
  - name: logs
    hostPath: /srv/web/logs
  - name: other
    hostPath: /srv/other
containers:
  - name: app
    image: example.org/shop/web:1.4.2
    command: ["/web", "--port=8080"]
    workingDir: /app
    env:
      - {name: MODE, value: prod}
      - {name: LEVEL, value: info}
      - {name: TOKEN, value: s3cret}
    ports:
      - {name: http, containerPort: 8080, hostPort: 8080, hostIP: 127.0.0.1}
      - {name: stats, containerPort: 8125, protocol: UDP}
    volumeMounts:
      - {name: data, mountPath: /data}
      - {name: logs, mountPath: /var/log/web, readOnly: true}
    memory: 67108864
    cpu: 512
    livenessProbe:
      type: http
      httpGet: {path: /healthz, port: http}
  - name: sidecar
    image: example.org/shop/sidecar:2
    volumeMounts:
      - {name: other, mountPath: /other}
`

// decodeOne decodes text holding exactly one valid manifest.
func decodeOne(t *testing.T, text string) manifest.Manifest {
	t.Helper()
	ms, err := manifest.Decode([]byte(text), manifest.Origin{Source: "test"})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if len(ms) != 1 || len(ms[0].Errors) > 0 {
		t.Fatalf("Decode: %d manifests, errors %v", len(ms), ms[0].Errors)
	}
	return ms[0].Manifest
}

// hashes returns the infra hash and every container hash of m.
func hashes(m manifest.Manifest) []string {
	out := []string{manifest.InfraHash(m)}
	for i := range m.Containers {
		out = append(out, manifest.ContainerHash(m, i))
	}
	return out
}

// TestHashSameSpec writes the base manifest in other ways that mean the
// same: every hash must stay the same.
func TestHashSameSpec(t *testing.T) {
	want := hashes(decodeOne(t, baseYAML))
	tests := []struct {
		name string
		text string
	}{
		{
			name: "keys reordered, flow style, comments",
			text: `
# the same pod, written differently
containers:
- volumeMounts: [{mountPath: /data, name: data}, {readOnly: true, mountPath: /var/log/web, name: logs}]
  livenessProbe: {httpGet: {port: http, path: /healthz}, type: http}
  cpu: 512
  memory: 67108864
  ports:
  - {hostIP: 127.0.0.1, hostPort: 8080, containerPort: 8080, name: http}
  - {protocol: UDP, containerPort: 8125, name: stats}
  env: [{value: prod, name: MODE}, {value: info, name: LEVEL}, {value: s3cret, name: TOKEN}]
  workingDir: "/app"
  command:
  - /web
  - '--port=8080'
  image: "example.org/shop/web:1.4.2"
  name: app
- {image: example.org/shop/sidecar:2, name: sidecar, volumeMounts: [{mountPath: /other, name: other}]}
volumes: [{name: data}, {hostPath: /srv/web/logs, name: logs}, {name: other, hostPath: /srv/other}]
labels:
  tier: frontend
  team: shop
id: "web"
version: 'v1beta1'
`,
		},
		{
			name: "JSON",
			text: `{"version":"v1beta1","id":"web","labels":{"tier":"frontend","team":"shop"},
"volumes":[{"name":"data"},{"name":"logs","hostPath":"/srv/web/logs"},{"name":"other","hostPath":"/srv/other"}],
"containers":[{"name":"app","image":"example.org/shop/web:1.4.2","command":["/web","--port=8080"],"workingDir":"/app",
"env":[{"name":"MODE","value":"prod"},{"name":"LEVEL","value":"info"},{"name":"TOKEN","value":"s3cret"}],
"ports":[{"name":"http","containerPort":8080,"hostPort":8080,"hostIP":"127.0.0.1"},{"name":"stats","containerPort":8125,"protocol":"UDP"}],
"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"logs","mountPath":"/var/log/web","readOnly":true}],
"memory":67108864,"cpu":512,"livenessProbe":{"type":"http","httpGet":{"path":"/healthz","port":"http"}}},
{"name":"sidecar","image":"example.org/shop/sidecar:2","volumeMounts":[{"name":"other","mountPath":"/other"}]}]}`,
		},
		{
			name: "empty args, as before args existed",
			text: `{"version":"v1beta1","id":"web","labels":{"tier":"frontend","team":"shop"},
"volumes":[{"name":"data"},{"name":"logs","hostPath":"/srv/web/logs"},{"name":"other","hostPath":"/srv/other"}],
"containers":[{"name":"app","image":"example.org/shop/web:1.4.2","command":["/web","--port=8080"],"args":[],"workingDir":"/app",
"env":[{"name":"MODE","value":"prod"},{"name":"LEVEL","value":"info"},{"name":"TOKEN","value":"s3cret"}],
"ports":[{"name":"http","containerPort":8080,"hostPort":8080,"hostIP":"127.0.0.1"},{"name":"stats","containerPort":8125,"protocol":"UDP"}],
"volumeMounts":[{"name":"data","mountPath":"/data"},{"name":"logs","mountPath":"/var/log/web","readOnly":true}],
"memory":67108864,"cpu":512,"livenessProbe":{"type":"http","httpGet":{"path":"/healthz","port":"http"}}},
{"name":"sidecar","image":"example.org/shop/sidecar:2","args":[],"volumeMounts":[{"name":"other","mountPath":"/other"}]}]}`,
		},
		{
			name: "env, ports and mounts reordered",
			text: strings.NewReplacer(
				"      - {name: MODE, value: prod}\n      - {name: LEVEL, value: info}\n      - {name: TOKEN, value: s3cret}\n",
				"      - {name: TOKEN, value: s3cret}\n      - {name: MODE, value: prod}\n      - {name: LEVEL, value: info}\n",
				"      - {name: http, containerPort: 8080, hostPort: 8080, hostIP: 127.0.0.1}\n      - {name: stats, containerPort: 8125, protocol: UDP}\n",
				"      - {name: stats, containerPort: 8125, protocol: UDP}\n      - {name: http, containerPort: 8080, hostPort: 8080, hostIP: 127.0.0.1}\n",
				"      - {name: data, mountPath: /data}\n      - {name: logs, mountPath: /var/log/web, readOnly: true}\n",
				"      - {name: logs, mountPath: /var/log/web, readOnly: true}\n      - {name: data, mountPath: /data}\n",
			).Replace(baseYAML),
		},
		{
			name: "defaults written out",
			text: `
version: v1beta1
id: web
restartPolicy: Always
terminationGracePeriodSeconds: 10
labels: {team: shop, tier: frontend}
volumes:
  - name: data
  - name: logs
    hostPath: /srv/web/logs
  - name: other
    hostPath: /srv/other
containers:
  - name: app
    image: example.org/shop/web:1.4.2
    imagePullPolicy: IfNotPresent
    command: ["/web", "--port=8080"]
    workingDir: /app
    env:
      - {name: MODE, value: prod}
      - {name: LEVEL, value: info}
      - {name: TOKEN, value: s3cret}
    ports:
      - {name: http, containerPort: 8080, hostPort: 8080, hostIP: 127.0.0.1, protocol: TCP}
      - {name: stats, containerPort: 8125, protocol: UDP, hostPort: 0}
    volumeMounts:
      - {name: data, mountPath: /data, readOnly: false}
      - {name: logs, mountPath: /var/log/web, readOnly: true}
    memory: 67108864
    cpu: 512
    livenessProbe:
      type: http
      httpGet: {path: /healthz, port: http, host: ""}
      initialDelaySeconds: 0
      periodSeconds: 10
      timeoutSeconds: 1
      failureThreshold: 3
  - name: sidecar
    image: example.org/shop/sidecar:2
    imagePullPolicy: IfNotPresent
    command: []
    env: []
    ports: []
    volumeMounts:
      - {name: other, mountPath: /other}
`,
		},
		{
			name: "protocol in lower case",
			text: strings.Replace(baseYAML, "protocol: UDP", "protocol: udp", 1),
		},
		{
			// The updater's policy: adding one recreates nothing.
			name: "an image policy",
			text: strings.Replace(baseYAML, "    image: example.org/shop/web:1.4.2\n", "    image: example.org/shop/web:1.4.2\n    imagePolicy: {semver: \"~1.4\", pin: digest}\n", 1),
		},
		{
			name: "protocol TCP in any case",
			text: strings.Replace(baseYAML, "hostIP: 127.0.0.1}", "hostIP: 127.0.0.1, protocol: tcp}", 1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := decodeOne(t, tt.text)
			if got := hashes(m); !slices.Equal(got, want) {
				t.Errorf("hashes changed:\n got %v\nwant %v", got, want)
			}
			if got := hashes(m.WithDefaults()); !slices.Equal(got, want) {
				t.Errorf("hashes of WithDefaults differ:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestHashSameValue writes values in other ways that mean the same.
func TestHashSameValue(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *manifest.Manifest)
	}{
		{name: "image with :latest", change: func(m *manifest.Manifest) { m.Containers[0].Image = "nginx:latest" }},
		{name: "image in full", change: func(m *manifest.Manifest) { m.Containers[0].Image = "docker.io/library/nginx:latest" }},
		{name: "mountPath with a trailing slash", change: func(m *manifest.Manifest) { m.Containers[0].VolumeMounts[0].MountPath = "/data/" }},
		{name: "hostPath with dots", change: func(m *manifest.Manifest) { m.Volumes[0].HostPath = "/srv/./web//logs" }},
		{name: "workingDir with a trailing slash", change: func(m *manifest.Manifest) { m.Containers[0].WorkingDir = "/app/" }},
		{name: "hostIP spelt out", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].HostIP = "0:0:0:0:0:0:0:1" }},
	}
	base := decodeOne(t, `
version: v1beta1
id: web
volumes: [{name: logs, hostPath: /srv/web/logs}]
containers:
  - name: app
    image: nginx
    workingDir: /app
    ports: [{containerPort: 80, hostPort: 80, hostIP: "::1"}]
    volumeMounts: [{name: logs, mountPath: /data}]
`)
	want := hashes(base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base.Clone()
			tt.change(&m)
			if got := hashes(m); !slices.Equal(got, want) {
				t.Errorf("hashes changed:\n got %v\nwant %v", got, want)
			}
		})
	}
}

// TestHashChanges changes one field of the base manifest at a time and
// checks which hashes change: a container's hash when a field that needs a
// new container changes, and nothing else.
func TestHashChanges(t *testing.T) {
	base := decodeOne(t, baseYAML)
	baseHashes := hashes(base)
	const (
		none    = iota
		app     // container 0's hash only
		pod     // every container hash (pod-level fields)
		appPort // container 0's hash and the infra hash
		podPort // every hash (labels)
		sidecar // container 1's hash only
	)
	tests := []struct {
		name   string
		change func(m *manifest.Manifest)
		want   int
	}{
		{name: "image", change: func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/shop/web:1.4.3" }, want: app},
		{name: "image tag to digest", change: func(m *manifest.Manifest) {
			m.Containers[0].Image = "example.org/shop/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		}, want: app},
		{name: "command argument", change: func(m *manifest.Manifest) { m.Containers[0].Command[1] = "--port=8081" }, want: app},
		{name: "command argument added", change: func(m *manifest.Manifest) {
			m.Containers[0].Command = append(m.Containers[0].Command, "-v")
		}, want: app},
		{name: "command removed", change: func(m *manifest.Manifest) { m.Containers[0].Command = nil }, want: app},
		{name: "args added", change: func(m *manifest.Manifest) { m.Containers[0].Args = []string{"-v"} }, want: app},
		{name: "command moved to args", change: func(m *manifest.Manifest) {
			m.Containers[0].Args, m.Containers[0].Command = m.Containers[0].Command, nil
		}, want: app},
		{name: "command split differently", change: func(m *manifest.Manifest) { m.Containers[0].Command = []string{"/web --port=8080"} }, want: app},
		{name: "env name 0", change: func(m *manifest.Manifest) { m.Containers[0].Env[0].Name = "MODE2" }, want: app},
		{name: "env name 1", change: func(m *manifest.Manifest) { m.Containers[0].Env[1].Name = "LVL" }, want: app},
		{name: "env name 2", change: func(m *manifest.Manifest) { m.Containers[0].Env[2].Name = "TOKEN_" }, want: app},
		{name: "env value 0", change: func(m *manifest.Manifest) { m.Containers[0].Env[0].Value = "dev" }, want: app},
		{name: "env value 1", change: func(m *manifest.Manifest) { m.Containers[0].Env[1].Value = "" }, want: app},
		{name: "env value 2", change: func(m *manifest.Manifest) { m.Containers[0].Env[2].Value = "s3cret2" }, want: app},
		{name: "env values swapped", change: func(m *manifest.Manifest) {
			e := m.Containers[0].Env
			e[0].Value, e[1].Value = e[1].Value, e[0].Value
		}, want: app},
		{name: "env added", change: func(m *manifest.Manifest) {
			m.Containers[0].Env = append(m.Containers[0].Env, manifest.EnvVar{Name: "NEW", Value: ""})
		}, want: app},
		{name: "env removed", change: func(m *manifest.Manifest) { m.Containers[0].Env = m.Containers[0].Env[:2] }, want: app},
		{name: "containerPort", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].ContainerPort = 8081 }, want: appPort},
		{name: "hostPort", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].HostPort = 8081 }, want: appPort},
		{name: "hostPort added", change: func(m *manifest.Manifest) { m.Containers[0].Ports[1].HostPort = 8125 }, want: appPort},
		{name: "protocol", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].Protocol = "UDP" }, want: appPort},
		{name: "hostIP", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].HostIP = "127.0.0.2" }, want: appPort},
		{name: "hostIP removed", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].HostIP = "" }, want: appPort},
		{name: "port added", change: func(m *manifest.Manifest) {
			m.Containers[0].Ports = append(m.Containers[0].Ports, manifest.Port{ContainerPort: 9000})
		}, want: appPort},
		{name: "mountPath", change: func(m *manifest.Manifest) { m.Containers[0].VolumeMounts[0].MountPath = "/data2" }, want: app},
		{name: "readOnly", change: func(m *manifest.Manifest) { m.Containers[0].VolumeMounts[0].ReadOnly = true }, want: app},
		{name: "mount of another volume", change: func(m *manifest.Manifest) { m.Containers[0].VolumeMounts[0].Name = "other" }, want: app},
		{name: "mount added", change: func(m *manifest.Manifest) {
			m.Containers[0].VolumeMounts = append(m.Containers[0].VolumeMounts, manifest.VolumeMount{Name: "other", MountPath: "/other"})
		}, want: app},
		{name: "hostPath of a mounted volume", change: func(m *manifest.Manifest) { m.Volumes[1].HostPath = "/srv/web/logs2" }, want: app},
		{name: "hostPath of the sidecar's volume", change: func(m *manifest.Manifest) { m.Volumes[2].HostPath = "/srv/other2" }, want: sidecar},
		{name: "empty volume given a hostPath", change: func(m *manifest.Manifest) { m.Volumes[0].HostPath = "/srv/data" }, want: app},
		{name: "workingDir", change: func(m *manifest.Manifest) { m.Containers[0].WorkingDir = "/" }, want: app},
		{name: "memory", change: func(m *manifest.Manifest) { m.Containers[0].Memory *= 2 }, want: app},
		{name: "memory removed", change: func(m *manifest.Manifest) { m.Containers[0].Memory = 0 }, want: app},
		{name: "cpu", change: func(m *manifest.Manifest) { m.Containers[0].CPU = 1024 }, want: app},
		{name: "sidecar image", change: func(m *manifest.Manifest) { m.Containers[1].Image = "example.org/shop/sidecar:3" }, want: sidecar},
		{name: "label value", change: func(m *manifest.Manifest) { m.Labels["team"] = "web" }, want: podPort},
		{name: "label added", change: func(m *manifest.Manifest) { m.Labels["new"] = "" }, want: podPort},
		{name: "label removed", change: func(m *manifest.Manifest) { delete(m.Labels, "tier") }, want: podPort},
		{name: "restartPolicy", change: func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartNever }, want: pod},
		{name: "restartPolicy OnFailure", change: func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartOnFailure }, want: pod},
		{name: "init container added", change: func(m *manifest.Manifest) {
			m.InitContainers = []manifest.Container{{Name: "setup", Image: "busybox:1.36"}}
		}, want: pod},

		// None of these needs a new container.
		{name: "restartPolicy Always written out", change: func(m *manifest.Manifest) { m.RestartPolicy = manifest.RestartAlways }, want: none},
		{name: "probe type", change: func(m *manifest.Manifest) {
			m.Containers[0].LivenessProbe = &manifest.Probe{Type: manifest.ProbeTCP, TCPSocket: &manifest.TCPSocket{Port: "8080"}}
		}, want: none},
		{name: "probe path", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.HTTPGet.Path = "/ready" }, want: none},
		{name: "probe port", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.HTTPGet.Port = "8080" }, want: none},
		{name: "probe host", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.HTTPGet.Host = "localhost" }, want: none},
		{name: "probe initial delay", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.InitialDelaySeconds = 30 }, want: none},
		{name: "probe period", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.PeriodSeconds = 30 }, want: none},
		{name: "probe timeout", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.TimeoutSeconds = 5 }, want: none},
		{name: "probe failure threshold", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe.FailureThreshold = 10 }, want: none},
		{name: "probe removed", change: func(m *manifest.Manifest) { m.Containers[0].LivenessProbe = nil }, want: none},
		{name: "probe added", change: func(m *manifest.Manifest) {
			m.Containers[1].LivenessProbe = &manifest.Probe{Type: manifest.ProbeExec, Exec: &manifest.Exec{Command: []string{"/check"}}}
		}, want: none},
		{name: "imagePullPolicy", change: func(m *manifest.Manifest) { m.Containers[0].ImagePullPolicy = manifest.PullAlways }, want: none},
		{name: "imagePullPolicy Never", change: func(m *manifest.Manifest) { m.Containers[1].ImagePullPolicy = manifest.PullNever }, want: none},
		{name: "grace period", change: func(m *manifest.Manifest) { m.TerminationGracePeriodSeconds = 120 }, want: none},
		{name: "port name", change: func(m *manifest.Manifest) { m.Containers[0].Ports[0].Name = "web" }, want: none},
		{name: "port name removed", change: func(m *manifest.Manifest) { m.Containers[0].Ports[1].Name = "" }, want: none},
		// fsGroup is a supplementary group of every container: set, even
		// to 0, it recreates them all; when its ownership change runs
		// recreates nothing.
		{name: "fsGroup set", change: func(m *manifest.Manifest) { m.FSGroup = ptr[int64](2000) }, want: pod},
		{name: "fsGroup 0 set", change: func(m *manifest.Manifest) { m.FSGroup = ptr[int64](0) }, want: pod},
		{name: "fsGroupChangePolicy", change: func(m *manifest.Manifest) { m.FSGroupChangePolicy = manifest.FSGroupChangeOnRootMismatch }, want: none},
		{name: "unmounted volume added", change: func(m *manifest.Manifest) {
			m.Volumes = append(m.Volumes, manifest.Volume{Name: "spare", HostPath: "/srv/spare"})
		}, want: none},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base.Clone()
			tt.change(&m)
			got := hashes(m)
			changed := []bool{got[0] != baseHashes[0], got[1] != baseHashes[1], got[2] != baseHashes[2]}
			want := map[int][]bool{
				none:    {false, false, false},
				app:     {false, true, false},
				pod:     {false, true, true},
				appPort: {true, true, false},
				podPort: {true, true, true},
				sidecar: {false, false, true},
			}[tt.want]
			if !slices.Equal(changed, want) {
				t.Errorf("changed (infra, app, sidecar) = %v, want %v", changed, want)
			}
			if hashes(base)[1] != baseHashes[1] {
				t.Fatalf("the change reached the base manifest: Clone is not deep")
			}
		})
	}
}

// TestHashFollowsSecurityOptOrder: Docker applies a container's security
// options in order, a later one of a key replacing an earlier (daemon
// parseSecurityOpt: AppArmorProfile, SeccompProfile, NoNewPrivileges are
// assigned per option). A spec hash that sorted them would let swapping
// two of one key change what runs but not the hash: the container would
// never be recreated and would keep the old setting.
func TestHashFollowsSecurityOptOrder(t *testing.T) {
	m := func(opts ...string) manifest.Manifest {
		return manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{
			Name: "app", Image: "example.org/app:1", SecurityOpt: opts}}}
	}
	on := m("no-new-privileges=false", "no-new-privileges=true")  // Docker: on
	off := m("no-new-privileges=true", "no-new-privileges=false") // Docker: off
	if manifest.ContainerHash(on, 0) == manifest.ContainerHash(off, 0) {
		t.Errorf("securityOpt %v and %v hash the same, but Docker runs one with no-new-privileges and the other without", on.Containers[0].SecurityOpt, off.Containers[0].SecurityOpt)
	}
}

func TestHashFormat(t *testing.T) {
	h := manifest.ContainerHash(decodeOne(t, baseYAML), 0)
	if !strings.HasPrefix(h, manifest.HashVersion+":") || len(h) != len("v1:")+64 {
		t.Errorf("hash %q is not v1:<64 hex digits>", h)
	}
	if got := manifest.ShortHash(h, 12); got != h[3:15] {
		t.Errorf("ShortHash = %q, want %q", got, h[3:15])
	}
	if got := manifest.ShortHash("v1:abc", 12); got != "abc" {
		t.Errorf("ShortHash of a short hash = %q", got)
	}
}

// TestHashGolden pins the hash of 12 fixed manifests.
//
// THESE VALUES MUST NEVER CHANGE. Every container hostlet runs carries its
// spec hash in the io.hostlet.hash label; a hostlet whose hash of the same
// manifest differs would see every container as changed and recreate them
// all on upgrade — exactly the restart this design promises never to do. A
// change to what is hashed needs a new HashVersion, and code that compares
// fields when it meets a container labelled with the old version. Never run
// -update for v1 except to add a new golden file.
func TestHashGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 14 {
		t.Fatalf("found %d golden manifests, want 14", len(files))
	}
	var got []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := decodeOne(t, string(data))
		name := filepath.Base(f)
		got = append(got, fmt.Sprintf("%s POD %s", name, manifest.InfraHash(m)))
		for i, c := range m.Containers {
			got = append(got, fmt.Sprintf("%s %s %s", name, c.Name, manifest.ContainerHash(m, i)))
		}
	}
	testkit.GoldenLines(t, filepath.Join("testdata", "golden", "hashes.txt"), got, *update,
		"the spec hash changed: upgraded hostlets would recreate every container (see the comment on this test)")
}

// TestHashFSGroupValue: another fsGroup is another group in every
// container, and the change policy written out or left to its default
// hashes the same.
func TestHashFSGroupValue(t *testing.T) {
	base := decodeOne(t, baseYAML)
	base.FSGroup = ptr[int64](2000)
	other := base.Clone()
	*other.FSGroup = 2001
	if a, b := hashes(base), hashes(other); a[1] == b[1] || a[2] == b[2] {
		t.Errorf("fsGroup 2000 and 2001 hash the same: %v", a)
	}
	if a, b := hashes(base), hashes(base.WithDefaults()); !slices.Equal(a, b) {
		t.Errorf("fsGroupChangePolicy written out changed the hashes:\n got %v\nwant %v", b, a)
	}
}

func ptr[T any](v T) *T { return &v }
