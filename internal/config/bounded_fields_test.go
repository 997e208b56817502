package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
)

// fullConfig is a valid host config that gives every struct of Config a
// value, so that a hostile value in any key meets the checks of a config
// that otherwise loads.
const fullConfig = `
hostname: web-1
stateDir: /var/lib/hostlet
listen: 127.0.0.1:10260
tokenFile: /etc/hostlet/token
instance: main
hostPathAllow: [/srv, /data]
docker: {host: "unix:///var/run/docker.sock", infraImage: "pause:1"}
sync:
  interval: 10s
  concurrency: 4
  pullTimeout: 10m
  buildConcurrency: 1
  buildTimeout: 30m
  prune: true
  allowEmpty: false
  windows: ["Mon-Fri 02:00-04:00"]
  timezone: UTC
etcd: {endpoints: ["http://127.0.0.1:2379"], prefix: /hostlet}
sources:
  - {name: local, type: file, paths: [base, "hosts/{{.Hostname}}"]}
  - name: fleet
    type: git
    url: "https://git.example/fleet.git"
    ref: main
    path: "hosts/{{.Hostname}}"
    interval: 1m
    auth: {username: u, passwordFile: /etc/hostlet/git-password}
    verify: {keyringFile: /etc/hostlet/keyring}
  - {name: ssh, type: git, url: "git@git.example:fleet.git", ref: main, auth: {sshKeyFile: /etc/hostlet/id, knownHostsFile: /etc/hostlet/known_hosts}}
  - {name: web, type: http, url: "https://cfg.example/{{.Hostname}}.yaml", headers: {Authorization: Bearer x}, interval: 1m, timeout: 5s}
  - {name: reg, type: etcd, key: /hostlet/manifests/}
  - {name: pub, type: git, url: "https://git.example/fleet.git", ref: main, via: etcd}
  - {name: push, type: push}
log: {level: info, format: json}
stats: {cadvisor: "http://127.0.0.1:8080"}
compose: {env: {TAG: "1"}, profiles: [web], helper: /usr/lib/hostlet/hostlet-compose}
policy:
  externalVolumes: [backups]
  externalNetworks: [lan]
  privileged: false
  capabilities: [NET_ADMIN]
  hostNetwork: false
  devices: [/dev/ttyUSB0]
  logDrivers: [syslog]
labels: {role: canary, zone: a}
notify:
  - {name: ops, url: "https://hooks.example/x", secretFile: /etc/hostlet/hook-key, events: [rollback, failed]}
  - {name: chat, urlFile: /etc/hostlet/chat-url}
`

// TestEveryConfigKeyLoadsInBoundedTime puts a hostile value (huge, deep,
// "/", "..", NUL, control characters, numbers past every bound, long
// lists, values of the wrong kind) in each key of every type reachable
// from Config, one at a time, in an otherwise valid host config, and
// loads it as `hostlet run --config` does (Load). Each must return within
// testkit.BoundedLimit without a panic. A key added to Config is walked
// without a change here.
func TestEveryConfigKeyLoadsInBoundedTime(t *testing.T) {
	base := testkit.Doc(t, fullConfig)
	dir := t.TempDir()
	if _, err := loadDoc(dir, base); err != nil {
		t.Fatalf("the walk's base config does not load: %v", err)
	}
	fields := testkit.Fields(reflect.TypeFor[Config](), base, "mapstructure")
	types, names := testkit.FieldCount(fields)
	cases := testkit.Cases(base, fields, testkit.Sizes())
	t.Logf("%d places of %d keys of %d types, %d hostile values", len(fields), names, types, len(cases))
	testkit.RunBounded(t, testkit.BoundedLimit(), cases, func(string) {}, func(c testkit.Case, dir string) {
		loadDoc(dir, testkit.Set(base, c.Path, c.Hostile.Value))
	})
}

// loadDoc writes doc as the host config in dir and loads it.
func loadDoc(dir string, doc any) (*Config, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, "hostlet.yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return nil, err
	}
	return Load(p)
}

// TestDeepOrHugeConfigIsRefusedBeforeDecoding: viper's work grows with
// the square of a document's depth (a config nested 1,000 deep took
// seconds to load, 9,000 deep minutes): a config file nested deeper than
// MaxDepth, or over MaxFileBytes, is refused before viper reads it.
func TestDeepOrHugeConfigIsRefusedBeforeDecoding(t *testing.T) {
	deep := strings.Repeat("{a: ", 9_000) + "1" + strings.Repeat("}", 9_000)
	tests := []struct {
		name, data, want string
	}{
		{name: "deep mappings", data: "hostname: " + deep + "\n", want: "nested more than 32 deep"},
		{name: "deep lists", data: "hostPathAllow: " + strings.Repeat("[", 9_000) + strings.Repeat("]", 9_000) + "\n", want: "nested more than 32 deep"},
		{name: "huge", data: "hostname: h\n#" + strings.Repeat("x", MaxFileBytes) + "\n", want: "over 4194304 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "hostlet.yaml")
			testkit.WriteFile(t, p, tt.data)
			start := time.Now()
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: %v, want an error saying %q", err, tt.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("refused after %s, want milliseconds (10 s on a loaded machine)", d)
			}
		})
	}
	p := filepath.Join(t.TempDir(), "hostlet.yaml")
	testkit.WriteFile(t, p, "sources:\n  - name: a\n    type: git\n    url: https://git.example/a.git\n    auth: {username: "+strings.Repeat("[", MaxDepth-4)+"u"+strings.Repeat("]", MaxDepth-4)+"}\n")
	if _, err := Load(p); err == nil || strings.Contains(err.Error(), "deep") {
		t.Errorf("a config %d deep: %v, want refused by its keys' rules, not by depth", MaxDepth, err)
	}
}
