package compose_test

// What the loader makes of the values a project writes: an env value is
// never shown in an error, values mean what docs/compose.md says, and an
// env file line that does not parse is named. Each test states the
// promise it checks.

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/project"
)

// TestEnvValuesNeverInErrors (promise 2): env values never appear in an
// error or a note. A value from compose.env (or .env) that lands in a
// typed field is quoted back by compose-go's casts and parsers and by
// hostlet's own translation errors, unless hidden; one that lands in an
// environment name is that name in a field path, with its dots.
func TestEnvValuesNeverInErrors(t *testing.T) {
	for _, secret := range []string{"hunter2pw", "hunter2.pw"} {
		t.Run(secret, func(t *testing.T) { envValuesNeverInErrors(t, secret) })
	}
}

func envValuesNeverInErrors(t *testing.T, secret string) {
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
				pods, errs := load(t, files, opts)
				for _, p := range pods {
					for _, n := range p.Notes {
						errs = append(errs, n.Error())
					}
				}
				for _, e := range errs {
					if strings.Contains(e, "hunter2") {
						t.Errorf("the value of SECRET is in an error or a note: %s", e)
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

// TestEnvFileLastLineWithoutEqualsIsNamed (promise 5, and docs: "An error
// in an .env or env_file names the file and line"): a last line without
// '=' and without a newline is named, not taken for a variable with an
// empty name holding the whole line (a pasted secret, say).
func TestEnvFileLastLineWithoutEqualsIsNamed(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web: {image: busybox, env_file: [a.env]}\n", "a.env": "A=1\nDB_PASSWORD hunter2"}, compose.Options{})
	for _, e := range errs {
		if strings.Contains(e, "a.env") && strings.Contains(e, "line 2") {
			return
		}
	}
	t.Errorf("no error naming a.env line 2; errors %q, env %+v", errs, pods[0].Manifest.Containers[0].Env)
}
