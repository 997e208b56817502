package compose_test

// Attacks on the Compose loader (outside review). Each test states the
// promise it checks; a failing test is a finding.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/project"
)

// outsideCompose writes a Compose file outside any project (another team's
// project on the same host, say) and returns its path.
func outsideCompose(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "compose.yaml")
	body := "services:\n  db:\n    image: stolen\n    environment:\n      OTHER_TEAM_DB_PASSWORD: s3cr3t-from-outside\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Promise 1: nothing outside the project is read. preScan refuses
// extends.file by decoding the FIRST YAML document with yaml.v3 and gives
// up (returns no finding) on any decode error; compose-go loads every
// document of the stream and accepts tags yaml.v3 refuses. Either way
// compose-go then reads the named host file itself (os.ReadFile, as the
// helper's user, root on a Docker host) and merges its service into the
// attacker's, secrets included. /dev/zero as the file makes the helper
// allocate without bound until the 60 s timeout.
func TestAttackExtendsFileBypassesPreScan(t *testing.T) {
	outside := outsideCompose(t)
	tests := []struct {
		name string
		file string
	}{
		{"second YAML document", "services: {}\n---\nservices:\n  web:\n    image: x\n    extends: {file: " + outside + ", service: db}\n"},
		{"!reset tag on a sibling service", "services:\n  web:\n    image: x\n    extends: {file: " + outside + ", service: db}\n  other: !reset null\n"},
		{"relative path out of the working dir", "services: {}\n---\nservices:\n  web:\n    image: x\n    extends: {file: ../../../../../../../../../../.." + outside + ", service: db}\n"},
	}
	check := func(t *testing.T, pods []manifest.Sourced, errs []string) {
		t.Helper()
		for _, p := range pods {
			for _, c := range p.Manifest.Containers {
				for _, e := range c.Env {
					if strings.Contains(e.Value, "s3cr3t-from-outside") {
						t.Errorf("pod %s got %s=%s from %s, a file outside the project", p.Manifest.ID, e.Name, e.Value, outside)
					}
				}
			}
		}
		refused := false
		for _, e := range errs {
			// Refused by the pre-scan (earlier), or by the project's own
			// loader, which reads only files of the project.
			if strings.Contains(e, "extends.file") || strings.Contains(e, "not a host path") || strings.Contains(e, "leaves the project folder") {
				refused = true
			}
		}
		if !refused {
			t.Errorf("extends.file not refused; errors %q", errs)
		}
	}
	for _, tt := range tests {
		t.Run("folder/"+tt.name, func(t *testing.T) {
			pods, errs := load(t, mapFiles{"compose.yaml": tt.file}, compose.Options{})
			check(t, pods, errs)
		})
		t.Run("http body/"+tt.name, func(t *testing.T) {
			pods, err := compose.LoadBytes(context.Background(), []byte(tt.file), compose.Options{Source: "edge"})
			check(t, pods, errorTexts(t, pods, err))
		})
	}
	// The existence of any host path is an oracle too.
	t.Run("existence oracle", func(t *testing.T) {
		_, errs := load(t, mapFiles{"compose.yaml": "services: {}\n---\nservices:\n  web:\n    image: x\n    extends: {file: /nonexistent/hostlet-probe, service: db}\n"}, compose.Options{})
		for _, e := range errs {
			if strings.Contains(e, "no such file") {
				t.Errorf("error reports on a host path: %s", e)
			}
		}
	})
}

// Promise 2: env values never appear in an error. A value from
// compose.env (or .env) that lands in a typed field is quoted back by
// compose-go's casts and parsers and by hostlet's own translation errors.
func TestAttackSecretInErrorText(t *testing.T) {
	const secret = "hunter2pw"
	tests := []struct{ name, svc string }{
		{"mem_limit", `mem_limit: "${SECRET}"`},
		{"deploy memory", `deploy: {resources: {limits: {memory: "${SECRET}"}}}`},
		{"stop_grace_period", `stop_grace_period: "1${SECRET}"`},
		{"cpu_shares", `cpu_shares: "${SECRET}"`},
		{"scale", `scale: "${SECRET}"`},
		{"deploy.replicas", `deploy: {replicas: "${SECRET}"}`},
		{"ports host", `ports: ["${SECRET}:80"]`},
		{"ports container", `ports: ["80:${SECRET}"]`},
		{"ports protocol", `ports: ["80:80/${SECRET}"]`},
		{"ports long target", `ports: [{target: "${SECRET}", published: "80"}]`},
		{"ports long published", `ports: [{target: 80, published: "${SECRET}"}]`},
		{"expose", `expose: ["${SECRET}"]`},
		{"restart", `restart: "${SECRET}"`},
		{"pull_policy", `pull_policy: "${SECRET}"`},
		{"env_file path", `env_file: ["${SECRET}"]`},
		{"environment list entry", `environment: ["${SECRET}"]`},
		{":? message", `environment: {A: "${UNSET:?${SECRET}}"}`},
	}
	for _, tt := range tests {
		for _, where := range []string{"compose.env", ".env"} {
			t.Run(tt.name+"/"+where, func(t *testing.T) {
				files := mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    " + tt.svc + "\n"}
				opts := compose.Options{}
				if where == ".env" {
					files[".env"] = "SECRET=" + secret + "\n"
				} else {
					opts.Host = project.Host{Env: map[string]string{"SECRET": secret}}
				}
				_, errs := load(t, files, opts)
				for _, e := range errs {
					if strings.Contains(e, "hunter2") {
						t.Errorf("the value of SECRET is in an error: %s", e)
					}
				}
			})
		}
	}
}

// Values of allowed keys are applied, or mean what docs/compose.md says:
// a port's name is its name; app_protocol and mode (a swarm publishing
// mode; without swarm both publish on the host) change nothing, as in
// docker compose; create_host_path is never honoured (hostlet never
// creates a host folder: a bind of a missing path fails, naming it).
func TestComposeValuesAsDocumented(t *testing.T) {
	tests := []struct {
		name, svc string
		check     func(manifest.Manifest) bool
	}{
		{"ports name", `ports: [{target: 80, published: "8080", name: web}]`, func(m manifest.Manifest) bool {
			return len(m.Containers[0].Ports) == 1 && m.Containers[0].Ports[0].Name == "web"
		}},
		{"ports app_protocol", `ports: [{target: 80, published: "8080", app_protocol: http}]`, func(m manifest.Manifest) bool { return len(m.Containers[0].Ports) == 1 }},
		{"ports mode host", `ports: [{target: 80, published: "8080", mode: host}]`, func(m manifest.Manifest) bool { return m.Containers[0].Ports[0].HostPort == 8080 }},
		{"bind.create_host_path", `volumes: [{type: bind, source: /srv/new, target: /data, bind: {create_host_path: true}}]`, func(m manifest.Manifest) bool {
			return len(m.Volumes) == 1 && m.Volumes[0].HostPath == "/srv/new"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    " + tt.svc + "\n"}, compose.Options{})
			if len(pods) != 1 || len(errs) > 0 || !tt.check(pods[0].Manifest) {
				t.Errorf("%s: pods %+v, errors %q", tt.svc, pods, errs)
			}
		})
	}
}

// Promise 5 (and docs: "An error in an .env or env_file names the file and
// line"): a last line without '=' and without a newline becomes a variable
// with an empty name holding the whole line, e.g. a pasted secret.
func TestAttackEnvFileLastLineWithoutEquals(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web: {image: busybox, env_file: [a.env]}\n", "a.env": "A=1\nDB_PASSWORD hunter2"}, compose.Options{})
	for _, e := range errs {
		if strings.Contains(e, "a.env") && strings.Contains(e, "line 2") {
			return
		}
	}
	t.Errorf("no error naming a.env line 2; errors %q, env %+v", errs, pods[0].Manifest.Containers[0].Env)
}

// Promise 3: bounded work. expose ranges are capped at 1000 ports, ports
// ranges are not: one 67-byte line is 65535 ports per replica (with
// scale: 100 the helper holds 1.5 GB and answers 378 MB of JSON).
func TestAttackPortRangeUnbounded(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web: {image: busybox, ports: ['1-65535:1-65535']}\n"}, compose.Options{})
	n := 0
	for _, p := range pods {
		n += len(p.Manifest.Containers[0].Ports)
	}
	if n > 1001 {
		t.Errorf("one port line became %d ports (expose is capped at 1000); errors %q", n, errs)
	}
}

// Promise 3: bounded CPU. compose-go validates and merges the whole model
// once per YAML document (n tiny documents cost O(n^2): 800 took 23 s), so
// a file of more than MaxDocuments documents is refused before it runs.
func TestAttackManyDocumentsRefused(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		if i > 0 {
			b.WriteString("---\n")
		}
		fmt.Fprintf(&b, "services:\n  s%d:\n    image: x\n    profiles: [off]\n", i)
	}
	pods, errs := load(t, mapFiles{"compose.yaml": b.String()}, compose.Options{})
	want := []string{fmt.Sprintf("apps:shop/compose.yaml: more than %d YAML documents in one Compose file", compose.MaxDocuments)}
	if len(pods) != 0 || !slices.Equal(errs, want) {
		t.Errorf("pods %d, errors %q; want %q", len(pods), errs, want)
	}
}
