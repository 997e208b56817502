package validate_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/validate"
)

// fullManifest is a valid pod that gives every struct of the manifest a
// value, so that a hostile value in any field meets the checks of a
// manifest that is otherwise accepted.
const fullManifest = `
version: v1beta1
id: web
restartPolicy: Always
terminationGracePeriodSeconds: 10
labels: {tier: web}
hostname: web
extraHosts: ["db.local:10.0.0.2"]
dns: [10.0.0.53]
dnsSearch: [example.com]
minReadySeconds: 10
progressDeadlineSeconds: 300
rollback: Auto
volumes:
  - {name: host, hostPath: /srv/data}
  - {name: vol, dockerVolume: web-data}
  - {name: backups, dockerVolume: corp-backups, external: true}
  - {name: conf, files: {source: conf, items: [{path: app/app.conf, data: aGVsbG8=, mode: 0444}, {path: run.sh, data: aGVsbG8=, mode: 0555}]}}
  - {name: scratch}
networks:
  - {name: backend, aliases: [web], subnet: 10.9.0.0/24, gateway: 10.9.0.1, ipRange: 10.9.0.0/25, ipv4Address: 10.9.0.10}
  - {name: corp-lan, external: true}
containers:
  - name: app
    image: registry.example:5000/app:1
    imagePullPolicy: IfNotPresent
    command: [/bin/app]
    args: [--listen, ":80"]
    workingDir: /srv
    env: [{name: MODE, value: prod}]
    ports: [{name: http, containerPort: 80, hostPort: 8080, protocol: TCP, hostIP: 127.0.0.1}]
    volumeMounts:
      - {name: host, mountPath: /data, readOnly: true}
      - {name: vol, mountPath: /var/lib/app}
      - {name: backups, mountPath: /backups}
      - {name: conf, mountPath: /etc/app, readOnly: true}
      - {name: scratch, mountPath: /tmp/scratch}
    memory: 268435456
    cpu: 512
    cpuLimit: 500
    livenessProbe: {type: http, httpGet: {path: /healthz, port: "80", host: 10.9.0.10}, initialDelaySeconds: 1, periodSeconds: 5, timeoutSeconds: 1, failureThreshold: 3}
    readinessProbe: {type: tcp, tcpSocket: {port: http}, periodSeconds: 5}
    user: "1000:1000"
    readOnly: true
    init: true
    stopSignal: SIGQUIT
    shmSize: 67108864
    healthcheck: {command: [/bin/app, check], intervalSeconds: 30, timeoutSeconds: 5, startPeriodSeconds: 1, retries: 3}
    capAdd: [NET_ADMIN]
    capDrop: [ALL]
    devices: [{hostPath: /dev/null, containerPath: /dev/app, permissions: rw}]
    securityOpt: [no-new-privileges]
    ulimits: [{name: nofile, soft: 1024, hard: 2048}]
    sysctls: {kernel.msgmax: "65536"}
    logging: {driver: json-file, options: {max-size: 10m}}
  - name: job
    image: hostlet-job
    readinessProbe: {type: exec, exec: {command: [/bin/true]}}
    healthcheck: {shell: "test -f /ok"}
    build:
      context: ./web
      dockerfile: Dockerfile
      args: {VERSION: "1"}
      target: final
      labels: {tier: job}
      network: none
      extraHosts: ["db.local:10.0.0.2"]
      noCache: true
      pull: false
`

// boundedOptions are the host settings of the walk: a permissive policy,
// so that a hostile value meets every check behind the policy's.
var boundedOptions = validate.Options{
	HostPathAllow:    []string{"/srv"},
	StateDir:         "/var/lib/hostlet",
	DockerHost:       "unix:///var/run/docker.sock",
	ExternalVolumes:  []string{"corp-backups"},
	ExternalNetworks: []string{"corp-lan"},
	Policy: validate.Policy{
		Privileged: true, Capabilities: []string{"ALL"}, HostNetwork: true,
		Devices: []string{"/dev/null"}, LogDrivers: []string{"syslog"},
	},
}

// TestEveryManifestFieldValidatesInBoundedTime puts a hostile value (huge,
// deep, "/", "..", NUL, control characters, numbers past every bound,
// long lists, values of the wrong kind) in each field of every type
// reachable from manifest.Manifest, one at a time, in an otherwise valid
// manifest file, and reads and checks the file as the agent does
// (sources.ReadTree: decode, the build's context; validate.Set). Each
// must return within testkit.BoundedLimit without a panic, and account
// for the manifest (accepted or rejected). A field added to the manifest is
// walked without a change here.
func TestEveryManifestFieldValidatesInBoundedTime(t *testing.T) {
	base := testkit.Doc(t, fullManifest)
	prepare := func(dir string) {
		testkit.WriteFile(t, filepath.Join(dir, "web", "Dockerfile"), "FROM scratch AS final\nCOPY . /\n")
	}
	dir := t.TempDir()
	prepare(dir)
	if res, err := readAndValidate(t, dir, base); err != nil || len(res.Accepted) != 1 {
		t.Fatalf("the walk's base manifest is not valid: %v %+v", err, res.Rejected)
	}

	fields := testkit.Fields(reflect.TypeFor[manifest.Manifest](), base, "json")
	types, names := testkit.FieldCount(fields)
	cases := testkit.Cases(base, fields, testkit.Sizes())
	t.Logf("%d places of %d fields of %d types, %d hostile values", len(fields), names, types, len(cases))
	testkit.RunBounded(t, testkit.BoundedLimit(), cases, prepare, func(c testkit.Case, dir string) {
		res, _ := readAndValidate(t, dir, testkit.Set(base, c.Path, c.Hostile.Value))
		if n := len(res.Accepted) + len(res.Rejected); n > 1 {
			t.Errorf("%s: %d manifests accounted for one", c, n)
		}
	})
}

// readAndValidate writes doc as the source's one manifest file in dir
// and reads and checks the source as the agent does.
func readAndValidate(t *testing.T, dir string, doc any) (validate.Result, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		t.Errorf("encode the manifest: %v", err)
		return validate.Result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "web.json"), data, 0o600); err != nil {
		t.Errorf("write the manifest: %v", err)
		return validate.Result{}, err
	}
	snap, err := sources.ReadTree(context.Background(), dir, []string{"."}, "src", nil)
	res := validate.Set([]manifest.Snapshot{snap}, boundedOptions)
	if err != nil {
		return res, err
	}
	return res, res.Err()
}
