package compose

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/tree"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// fullProject is a valid project that gives most keys hostlet translates
// a value, so that a hostile value in any of them meets the checks of a
// project that is otherwise accepted.
const fullProject = `
name: shop
services:
  web:
    image: registry.example:5000/web:1
    command: [/bin/web, --port, "80"]
    entrypoint: [/bin/tini, --]
    environment: {MODE: prod, TOKEN: "${TOKEN}"}
    env_file: [{path: web.env, required: true}]
    ports: [{target: 80, published: "8080", protocol: tcp, host_ip: 127.0.0.1, mode: host, name: http, app_protocol: http}]
    expose: ["9000"]
    labels: {tier: web}
    working_dir: /srv
    hostname: web
    extra_hosts: ["db.local=10.0.0.2"]
    dns: [10.0.0.53]
    dns_search: [example.com]
    user: "1000:1000"
    read_only: true
    init: true
    stop_signal: SIGQUIT
    stop_grace_period: 10s
    shm_size: 64m
    mem_limit: 256m
    cpus: 0.5
    cpu_shares: 512
    pull_policy: missing
    restart: unless-stopped
    depends_on: {db: {condition: service_healthy, required: true}}
    healthcheck: {test: [CMD, /bin/web, check], interval: 30s, timeout: 5s, retries: 3, start_period: 1s}
    deploy: {update_config: {monitor: 10s, failure_action: rollback}}
    networks: {backend: {aliases: [web], ipv4_address: 10.9.0.10}}
    volumes:
      - {type: bind, source: ./conf, target: /etc/app, read_only: true}
      - {type: volume, source: data, target: /data}
      - {type: volume, source: backups, target: /backups}
    configs: [{source: conf, target: /etc/app.conf, mode: 0444}]
    secrets: [{source: token, target: /run/secrets/token, mode: 0400}]
    cap_add: [NET_ADMIN]
    cap_drop: [ALL]
    devices: [{source: /dev/null, target: /dev/app, permissions: rw}]
    security_opt: [no-new-privileges:true]
    ulimits: {nofile: {soft: 1024, hard: 2048}}
    sysctls: {kernel.msgmax: "65536"}
    logging: {driver: json-file, options: {max-size: 10m}}
  db:
    image: shop-db
    build:
      context: ./db
      dockerfile: Dockerfile
      args: {VERSION: "1"}
      target: final
      labels: {tier: db}
      network: none
      extra_hosts: ["db.local=10.0.0.2"]
      no_cache: true
      pull: false
    deploy: {replicas: 1, resources: {limits: {cpus: "0.5", memory: 256m}}}
    healthcheck: {test: [CMD-SHELL, pg_isready], disable: false}
    networks: [backend]
networks:
  backend:
    driver: bridge
    internal: false
    ipam: {driver: default, config: [{subnet: 10.9.0.0/24, gateway: 10.9.0.1, ip_range: 10.9.0.0/25}]}
  lan: {name: corp-lan, external: true}
volumes:
  data: {driver: local}
  backups: {name: corp-backups, external: true}
configs:
  conf: {file: ./conf/app.conf}
  motd: {content: hello}
secrets:
  token: {file: ./secret.txt}
  env: {environment: TOKEN}
`

// projectFiles are the files beside the Compose file.
var projectFiles = map[string]string{
	EnvFile:         "TOKEN=abc\n",
	"web.env":       "A=1\n",
	"conf/app.conf": "listen 80\n",
	"secret.txt":    "s3cret\n",
	"db/Dockerfile": "FROM scratch AS final\nCOPY . /\n",
}

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

// TestEveryComposeKeyValidatesInBoundedTime puts a hostile value (huge,
// deep, "/", "..", NUL, control characters, numbers past every bound,
// long lists, values of the wrong kind) at each key hostlet translates
// (supportedPaths), one at a time, in an otherwise valid project, written
// there or interpolated from the host's compose.env, and renders and
// checks the project as the agent does (the helper's Render, then
// validate.Set). Each must return within testkit.BoundedLimit without a
// panic. A key added to supportedPaths is walked without a change here.
func TestEveryComposeKeyValidatesInBoundedTime(t *testing.T) {
	full := testkit.Doc(t, fullProject)
	if res, err := renderAndValidate(full, nil); err != nil || len(res.Accepted) != 2 {
		t.Fatalf("the walk's base project is not valid: %v %+v", err, res.Rejected)
	}
	sizes := testkit.Sizes()
	shapes, strs := testkit.HostileShapes(sizes), testkit.HostileStrings(sizes)
	var cases []testkit.Case
	bases := map[string]any{}
	for i, key := range supportedPaths {
		path := concretePath(full, strings.Split(string(key), "."))
		base := baseFor(full, path)
		if res, err := renderAndValidate(base, nil); err != nil || len(res.Accepted) != 2 {
			t.Fatalf("the walk's base project for %s is not valid: %v %+v", key, err, res.Rejected)
		}
		bases[path.String()] = base
		for _, h := range sample(i, valuesAt(path, string(key), shapes, strs, full, sizes)) {
			cases = append(cases, testkit.Case{Path: path, Hostile: h})
		}
	}
	t.Logf("%d keys, %d hostile values", len(supportedPaths), len(cases))
	testkit.RunBounded(t, testkit.BoundedLimit(), cases, func(string) {}, func(c testkit.Case, _ string) {
		var env map[string]string
		v := c.Hostile.Value
		if s, ok := strings.CutPrefix(c.Hostile.Name, "interpolated "); ok {
			env, v = map[string]string{"HOSTILE": lookupString(strs, s)}, "${HOSTILE}"
		}
		renderAndValidate(testkit.Set(bases[c.Path.String()], c.Path, v), env)
	})
}

// baseFor is the part of the full project that a key at path needs: the
// services with their image (and the healthcheck a dependency waits for);
// of the service on path, the key path names; and the top-level section
// path is in or its key refers to (a service's networks, volumes,
// configs, secrets). compose-go's work grows with the whole file: a
// small base keeps each render cheap.
func baseFor(full any, path testkit.Path) any {
	m := full.(map[string]any)
	out := map[string]any{}
	if name, ok := m["name"]; ok {
		out["name"] = name
	}
	services := m["services"].(map[string]any)
	small := map[string]any{}
	for name, s := range services {
		svc := s.(map[string]any)
		small[name] = map[string]any{"image": svc["image"]}
		if hc, ok := svc["healthcheck"]; ok {
			small[name].(map[string]any)["healthcheck"] = hc
		}
	}
	out["services"] = small
	section := path[0].(string)
	if len(path) >= 3 && section == "services" {
		name, key := path[1].(string), path[2].(string)
		if svc, ok := services[name].(map[string]any); ok && svc[key] != nil {
			small[name].(map[string]any)[key] = svc[key]
		}
		section = key
	}
	if v, ok := m[section]; ok && section != "services" {
		out[section] = v
	}
	return out
}

// sample is testkit.Sample of the small values of the key'th key, and
// one of its large values at every fourth key: compose-go's work on a
// large value (thousands of nodes, each matched against its paths) is
// tens of milliseconds, and the walk must take seconds. With testkit.All,
// every value.
func sample(key int, values []testkit.Hostile) []testkit.Hostile {
	if testkit.All() {
		return values
	}
	var small, large []testkit.Hostile
	for _, h := range values {
		if h.Large {
			large = append(large, h)
		} else {
			small = append(small, h)
		}
	}
	out := testkit.Sample(key, small)
	if key%4 == 0 && len(large) > 0 {
		out = append(out, large[(key/4)%len(large)])
	}
	return out
}

// valuesAt are the hostile values for key at path: at a key that holds
// others, values of any kind; at a leaf, strings (written, and
// interpolated from compose.env), numbers and values of any kind.
func valuesAt(path testkit.Path, key string, shapes, strs []testkit.Hostile, full any, sizes testkit.HostileSizes) []testkit.Hostile {
	leaf := !slices.ContainsFunc(supportedPaths, func(p tree.Path) bool {
		return strings.HasPrefix(string(p), key+".")
	})
	var hostile []testkit.Hostile
	if leaf {
		hostile = append(hostile, strs...)
		hostile = append(hostile, testkit.HostileNumbers()...)
		for _, h := range strs {
			hostile = append(hostile, testkit.Hostile{Name: "interpolated " + h.Name, Large: h.Large})
		}
	}
	hostile = append(hostile, shapes...)
	return append(hostile, testkit.Copies(full, path, sizes)...)
}

// lookupString is the hostile string named name.
func lookupString(strs []testkit.Hostile, name string) string {
	for _, h := range strs {
		if h.Name == name {
			return h.Value.(string)
		}
	}
	return ""
}

// concretePath is key's parts ("services", "*", "ports", "[]", "target")
// as a path of base: "*" the first key of the mapping there that has the
// next part ("x" where base has none), "[]" the first item that has it.
func concretePath(base any, parts []string) testkit.Path {
	var path testkit.Path
	doc := base
	for i, part := range parts {
		next := ""
		if i+1 < len(parts) {
			next = parts[i+1]
		}
		var step testkit.Step = part
		switch part {
		case "*":
			m, _ := doc.(map[string]any)
			keys := slices.Sorted(maps.Keys(m))
			step = "x"
			if len(keys) > 0 {
				step = keys[0]
			}
			if i := slices.IndexFunc(keys, func(k string) bool { return has(m[k], next) }); i >= 0 {
				step = keys[i]
			}
		case "[]":
			step = 0
			items, _ := doc.([]any)
			for j, item := range items {
				if has(item, next) {
					step = j
					break
				}
			}
		}
		path = append(path, step)
		doc = testkit.Lookup(doc, testkit.Path{step})
	}
	return path
}

// has reports whether doc has part: a key of a mapping, or items of a
// list for "[]" ("" and "*" are had by anything).
func has(doc any, part string) bool {
	switch part {
	case "", "*":
		return doc != nil
	case "[]":
		items, _ := doc.([]any)
		return len(items) > 0
	}
	m, _ := doc.(map[string]any)
	_, ok := m[part]
	return ok
}

// renderAndValidate renders the project doc (as JSON, which is YAML; with
// env as the host's compose.env) as the helper does, and checks its pods as the agent does.
func renderAndValidate(doc any, env map[string]string) (validate.Result, error) {
	data, err := json.Marshal(doc)
	if err != nil {
		return validate.Result{}, err
	}
	b := project.Bundle{
		Options: project.Options{Source: "apps", Dir: "shop", Name: "shop", Host: project.Host{Env: env}},
		Files:   map[string]project.File{"compose.yaml": {Data: data}},
	}
	for name, content := range projectFiles {
		b.Files[name] = project.File{Data: []byte(content)}
	}
	resp := Render(context.Background(), b)
	if len(resp.Errors) > 0 {
		return validate.Result{}, resp.Errors[0]
	}
	res := validate.Set([]manifest.Snapshot{{Name: "apps", Manifests: resp.Manifests}}, boundedOptions)
	return res, res.Err()
}
