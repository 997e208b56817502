package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "hostlet.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "unknown top key", body: "hostnme: x\n", want: []string{`unknown key "hostnme"`}},
		{name: "unknown nested key", body: "sync:\n  intervall: 5s\n", want: []string{`unknown key "sync.intervall"`}},
		{name: "unknown source key", body: "sources:\n- {name: a, type: file, path: /x, pth: y}\n", want: []string{`unknown key "sources[0].pth"`}},
		{name: "bad duration", body: "sync:\n  interval: 5 parsecs\n", want: []string{`key "sync.interval"`, `"5 parsecs" is not a duration`}},
		{name: "bare number duration", body: "sync:\n  interval: 5\n", want: []string{`key "sync.interval"`, "not a duration"}},
		{name: "duplicate source", body: "sources:\n- {name: a, type: file, path: /x}\n- {name: a, type: file, path: /y}\n", want: []string{`key "sources[1].name": duplicate source name "a" (also sources[0])`}},
		{name: "missing type", body: "sources:\n- {name: a, path: /x}\n", want: []string{`key "sources[0].type": required`}},
		{name: "bad type", body: "sources:\n- {name: a, type: ftp}\n", want: []string{`key "sources[0].type": "ftp" is not one of`}},
		{name: "file without path", body: "sources:\n- {name: a, type: file}\n", want: []string{`key "sources[0].path": required for a file source`}},
		{name: "etcd without endpoints", body: "sources:\n- {name: a, type: etcd, key: /k}\n", want: []string{`key "etcd.endpoints": required by etcd source "a"`}},
		{name: "bad template", body: "sources:\n- {name: a, type: file, path: \"/x/{{.Host}}\"}\n", want: []string{`key "sources[0].path"`, "only {{.Hostname}} is known"}},
		{name: "zero concurrency", body: "sync:\n  concurrency: 0\n", want: []string{`key "sync.concurrency": must be at least 1`}},
		{name: "zero pull timeout", body: "sync:\n  pullTimeout: 0s\n", want: []string{`key "sync.pullTimeout": must be positive`}},
		{name: "yaml error", body: "sync: [\n", want: []string{"hostlet.yaml"}},
		{name: "relative compose home", body: "compose:\n  home: ops\n", want: []string{`key "compose.home": "ops" is not a clean absolute path`}},
		{name: "unclean compose home", body: "compose:\n  home: /home/ops/../root\n", want: []string{`key "compose.home"`, "is not a clean absolute path"}},
		{name: "two engine sockets", body: "docker:\n  host: unix:///var/run/docker.sock\nengine:\n  host: unix:///run/podman/podman.sock\n", want: []string{`key "engine.host"`, "differs from docker.host"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeConfig(t, tt.body)
			_, err := Load(p)
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not name the file %s", err, p)
			}
		})
	}
}

// compose.env keeps the case of its names (viper folds map keys): TAG and
// tag are two variables.
func TestComposeEnvKeepsCase(t *testing.T) {
	p := writeConfig(t, `
compose:
  env: {TAG: "1.4", tag: lower, Mixed_Case: 3}
  profiles: [debug]
`)
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"TAG": "1.4", "tag": "lower", "Mixed_Case": "3"}
	if !reflect.DeepEqual(c.Compose.Env, want) || !reflect.DeepEqual(c.Compose.Profiles, []string{"debug"}) {
		t.Errorf("compose = %+v, want env %v and profiles [debug]", c.Compose, want)
	}
}

func TestLoadDefaultsEnvAndTemplates(t *testing.T) {
	p := writeConfig(t, `
hostname: web-1
hostPathAllow: [/srv]
sources:
  - {name: fleet, type: git, url: "file:///repo", paths: [common, "hosts/{{.Hostname}}"]}
  - {name: local, type: file, path: /etc/hostlet/manifests.d, interval: 20s}
`)
	t.Setenv("HOSTLET_SYNC_INTERVAL", "3s")
	t.Setenv("HOSTLET_SYNC_PRUNE", "false")
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sync.Interval != 3*time.Second {
		t.Errorf("sync.interval = %s, want 3s from the environment", c.Sync.Interval)
	}
	if c.Sync.Prune {
		t.Error("sync.prune = true, want false from the environment")
	}
	if c.Instance != "web-1" || c.Listen != "127.0.0.1:10260" || c.Sync.Concurrency != 4 || c.Etcd.Prefix != "/hostlet" {
		t.Errorf("defaults not applied: %+v", c)
	}
	if got := c.Sources[0].Paths[1]; got != "hosts/web-1" {
		t.Errorf("templated path = %q, want hosts/web-1", got)
	}
	if c.Sources[0].Ref != "main" || c.Sources[0].Interval != 3*time.Second {
		t.Errorf("git source defaults: ref %q interval %s", c.Sources[0].Ref, c.Sources[0].Interval)
	}
	if c.Sources[1].Interval != 20*time.Second {
		t.Errorf("file interval = %s, want 20s", c.Sources[1].Interval)
	}
	if len(c.HostPathAllow) != 1 || c.HostPathAllow[0] != "/srv" {
		t.Errorf("hostPathAllow = %v", c.HostPathAllow)
	}
}

func TestLoadSearchOrder(t *testing.T) {
	p := writeConfig(t, "hostname: from-env\n")
	t.Setenv("HOSTLET_CONFIG", p)
	c, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Hostname != "from-env" || c.File != p {
		t.Errorf("HOSTLET_CONFIG not used: hostname %q file %q", c.Hostname, c.File)
	}
	q := writeConfig(t, "hostname: from-flag\n")
	c, err = Load(q)
	if err != nil {
		t.Fatal(err)
	}
	if c.Hostname != "from-flag" {
		t.Errorf("--config did not win over HOSTLET_CONFIG: %q", c.Hostname)
	}
}

// engine.host is docker.host by its engine-neutral name.
func TestEngineHostIsTheDockerHost(t *testing.T) {
	for _, body := range []string{
		"engine:\n  host: unix:///run/podman/podman.sock\n",
		"docker:\n  host: unix:///run/podman/podman.sock\nengine:\n  host: unix:///run/podman/podman.sock\n",
	} {
		c, err := Load(writeConfig(t, body))
		if err != nil {
			t.Fatal(err)
		}
		if c.Docker.Host != "unix:///run/podman/podman.sock" {
			t.Errorf("%q: docker.host %q, want Podman's socket", body, c.Docker.Host)
		}
	}
}
