package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzLoad writes its input as a config file and loads it, as `hostlet
// run --config` does. Load must not panic; an error must name the file;
// a config that loads must satisfy the rules
// complete checks (so nothing invalid slips through a decode quirk) and
// load again to the same value.
func FuzzLoad(f *testing.F) {
	seeds := []string{
		"",
		"hostname: h1\n",
		"sync: [\n",
		"sync:\n  interval: 30\n",
		"sync:\n  interval: 1m\n  concurrency: 2\n  prune: false\n  allowEmpty: true\n",
		"hostname: web-1\nstateDir: /tmp/s\nlisten: 0.0.0.0:10260\ntokenFile: /etc/hostlet/token\ninstance: i\n" +
			"hostPathAllow: [/srv, /data]\ndocker: {host: unix:///var/run/docker.sock, infraImage: pause:1}\n" +
			"etcd: {endpoints: [http://127.0.0.1:2379], prefix: /hostlet}\nlog: {level: debug, format: json}\n" +
			"sources:\n" +
			"  - {name: local, type: file, paths: [base, 'hosts/{{.Hostname}}']}\n" +
			"  - {name: fleet, type: git, url: 'https://TOKEN@git.example/fleet.git', ref: main, path: 'hosts/{{.Hostname}}', auth: {username: u, passwordFile: /p}, verify: {keyringFile: /k}}\n" +
			"  - {name: web, type: http, url: 'https://cfg.example/{{.Hostname}}.yaml', headers: {Authorization: Bearer x}, interval: 1m, timeout: 5s}\n" +
			"  - {name: reg, type: etcd, key: /hostlet/manifests/}\n" +
			"  - {name: push, type: push}\n",
		"sources:\n  - {name: a, type: file}\n  - {name: a, type: push}\n  - {name: B_, type: nope}\n",
		"sources:\n  - {name: x, type: http, url: 'ftp://x'}\n  - {name: y, type: file, path: '{{.Env}}'}\n",
		"unknown: 1\nsync: {bogus: true}\n",
		"log: {level: loud}\nsync: {interval: -1s, concurrency: 0}\n",
		"a: &a [*a, *a]\n",
		"sources: {}\n",
		"hostPathAllow: /srv,/data\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", "hostlet.yaml")); err == nil {
		f.Add(b)
	} else {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "hostlet.yaml")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(p)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "config "+p+": ") {
				t.Fatalf("error does not start with the file: %q", msg)
			}
			return
		}
		if c.File != p || c.Hostname == "" || c.Instance == "" || c.StateDir == "" || c.Sync.Interval <= 0 || c.Sync.Concurrency < 1 {
			t.Fatalf("loaded a config that breaks a rule: %+v", c)
		}
		names := map[string]bool{}
		for i, s := range c.Sources {
			if !sourceNameRE.MatchString(s.Name) || names[s.Name] {
				t.Fatalf("sources[%d]: name %q accepted", i, s.Name)
			}
			names[s.Name] = true
			switch s.Type {
			case TypeFile, TypeGit, TypeHTTP, TypeEtcd, TypePush:
			default:
				t.Fatalf("sources[%d]: type %q accepted", i, s.Type)
			}
			if s.Interval <= 0 || s.Timeout <= 0 {
				t.Fatalf("sources[%d]: interval %s, timeout %s", i, s.Interval, s.Timeout)
			}
		}
		again, err := Load(p)
		if err != nil || !reflect.DeepEqual(c, again) {
			t.Fatalf("loading again: %v\n%+v\n%+v", err, c, again)
		}
	})
}
