package compose_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// mapFiles is a project folder in memory; names ending in "*" are
// executable ("run.sh*"), and a file "!err" does not read (a link).
type mapFiles map[string]string

func (m mapFiles) Names() []string {
	var out []string
	for n := range m {
		out = append(out, strings.TrimSuffix(n, "*"))
	}
	sort.Strings(out)
	return out
}

func (m mapFiles) Executable(name string) bool {
	_, ok := m[name+"*"]
	return ok
}

func (m mapFiles) ReadFile(name string) ([]byte, error) {
	if !fs.ValidPath(name) {
		return nil, fmt.Errorf("%s: invalid name", name)
	}
	s, ok := m[name]
	if !ok {
		s, ok = m[name+"*"]
	}
	if s == "!err" {
		return nil, fmt.Errorf("%s: a link", name)
	}
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	}
	return []byte(s), nil
}

func load(t *testing.T, files mapFiles, opts compose.Options) ([]manifest.Sourced, []string) {
	t.Helper()
	if opts.Source == "" {
		opts.Source = "apps"
	}
	if opts.Dir == "" {
		opts.Dir = "shop"
	}
	pods, err := compose.Load(context.Background(), files, opts)
	return pods, errorTexts(t, pods, err)
}

// errorTexts are the project's errors and its pods' errors, as shown.
func errorTexts(t *testing.T, pods []manifest.Sourced, err error) []string {
	t.Helper()
	var out []string
	if err != nil {
		var merr *multierror.Error
		if !errors.As(err, &merr) {
			t.Fatalf("error is %T, not a *multierror.Error: %v", err, err)
		}
		for _, e := range merr.Errors {
			var me *manifest.Error
			if !errors.As(e, &me) {
				t.Fatalf("error is %T, not a *manifest.Error: %v", e, e)
			}
			out = append(out, me.Error())
		}
	}
	for _, p := range pods {
		for _, e := range p.Errors {
			out = append(out, e.Error())
		}
	}
	return out
}

func TestLoadTranslatesServices(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  web:
    image: nginx:1.27
    entrypoint: ["/docker-entrypoint.sh"]
    command: nginx -g "daemon off;"
    environment:
      MODE: prod
      EMPTY: ""
    ports:
      - "8080:80"
      - "127.0.0.1:8443:443/tcp"
      - target: 53
        published: "5353"
        protocol: udp
    expose: ["9000", "80"]
    labels:
      team: shop
    working_dir: /srv
    restart: unless-stopped
    stop_grace_period: 1m30s
    mem_limit: 64m
    cpu_shares: 512
    volumes:
      - /var/log/shop:/logs:ro
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods, want 1", len(pods))
	}
	got := pods[0]
	want := manifest.Manifest{
		Version:                       manifest.Version,
		ID:                            "shop-web",
		RestartPolicy:                 manifest.RestartAlways,
		TerminationGracePeriodSeconds: 90,
		Labels: map[string]string{
			compose.LabelProject: "shop", compose.LabelService: "web", compose.LabelContainerNumber: "1", compose.LabelOneoff: "False",
			"team": "shop",
		},
		Volumes:  []manifest.Volume{{Name: "bind-0", HostPath: "/var/log/shop"}},
		Networks: []manifest.Network{{Name: "shop_default", Aliases: []string{"web"}}},
		Containers: []manifest.Container{{
			Name:            "web",
			Image:           "nginx:1.27",
			ImagePullPolicy: manifest.PullIfNotPresent,
			Command:         []string{"/docker-entrypoint.sh"},
			Args:            []string{"nginx", "-g", "daemon off;"},
			WorkingDir:      "/srv",
			Env:             []manifest.EnvVar{{Name: "EMPTY", Value: ""}, {Name: "MODE", Value: "prod"}},
			Ports: []manifest.Port{
				{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"},
				{ContainerPort: 443, HostPort: 8443, Protocol: "TCP", HostIP: "127.0.0.1"},
				{ContainerPort: 53, HostPort: 5353, Protocol: "UDP"},
				{ContainerPort: 9000, Protocol: "TCP"},
			},
			VolumeMounts: []manifest.VolumeMount{{Name: "bind-0", MountPath: "/logs", ReadOnly: true}},
			Memory:       64 << 20,
			CPU:          512,
		}},
	}
	if !reflect.DeepEqual(got.Manifest, want) {
		t.Errorf("manifest:\n got %+v\nwant %+v", got.Manifest, want)
	}
	if want := (manifest.Origin{Source: "apps", File: "shop/compose.yaml"}); got.Origin != want {
		t.Errorf("origin %+v, want %+v", got.Origin, want)
	}
}

func TestLoadNamesAndReplicas(t *testing.T) {
	files := mapFiles{"compose.yaml": `
name: My_Shop
services:
  api_v2:
    image: busybox
    deploy:
      replicas: 3
  zero:
    image: busybox
    scale: 0
  db:
    image: busybox
    restart: "no"
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	var ids []string
	for _, p := range pods {
		ids = append(ids, fmt.Sprintf("%s/%s/%s/%d", p.Manifest.ID, p.Manifest.Containers[0].Name, p.Manifest.Labels[compose.LabelContainerNumber], p.Origin.Index))
	}
	want := []string{"my-shop-api-v2-1/api-v2/1/0", "my-shop-api-v2-2/api-v2/2/1", "my-shop-api-v2-3/api-v2/3/2", "my-shop-db/db/1/3"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("pods %q, want %q", ids, want)
	}
	if p := pods[3].Manifest; p.RestartPolicy != manifest.RestartNever || p.Labels[compose.LabelProject] != "my_shop" {
		t.Errorf("db: restart %q, project label %q", p.RestartPolicy, p.Labels[compose.LabelProject])
	}
}

func TestLoadInterpolation(t *testing.T) {
	const file = `
services:
  web:
    image: "busybox:${TAG}"
    environment:
      GREETING: "${HELLO:-hi}"
      FROM_ENV:
      LITERAL: "cost: $$5"
`
	tests := []struct {
		name      string
		dotenv    string
		host      map[string]string
		wantImg   string
		wantEnv   map[string]string
		wantErrs  []string
		wantNotes []string
	}{
		{
			name:    "from .env",
			dotenv:  "TAG=1.36\nFROM_ENV=dot\n",
			wantImg: "busybox:1.36",
			wantEnv: map[string]string{"GREETING": "hi", "FROM_ENV": "dot", "LITERAL": "cost: $5"},
		},
		{
			name:    "host compose.env wins over .env",
			dotenv:  "TAG=1.36\nFROM_ENV=dot\n",
			host:    map[string]string{"TAG": "1.37", "HELLO": "hello", "FROM_ENV": "host"},
			wantImg: "busybox:1.37",
			wantEnv: map[string]string{"GREETING": "hello", "FROM_ENV": "host", "LITERAL": "cost: $5"},
		},
		{
			name: "a variable without value or default is an error naming it",
			wantErrs: []string{
				`apps:shop/compose.yaml: error while interpolating services.web.image: variable TAG is not set (set it in the project's .env or the host config's compose.env, or give a default: ${TAG:-value})`,
			},
		},
		{
			name:    "an environment entry without a value and nothing to take it from is left out, as Compose does, with a note",
			dotenv:  "TAG=1\n",
			wantImg: "busybox:1",
			wantEnv: map[string]string{"GREETING": "hi", "LITERAL": "cost: $5"},
			wantNotes: []string{
				`apps:shop/compose.yaml: services.web.environment.FROM_ENV: not set in the project's .env or the host config's compose.env: left out of the container's environment, as Compose leaves it out`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TAG", "from-hostlet-process") // never read
			files := mapFiles{"compose.yaml": file}
			if tt.dotenv != "" {
				files[".env"] = tt.dotenv
			}
			pods, errs := load(t, files, compose.Options{Host: compose.Host{Env: tt.host}})
			if !reflect.DeepEqual(errs, tt.wantErrs) {
				t.Fatalf("errors:\n got %q\nwant %q", errs, tt.wantErrs)
			}
			if tt.wantErrs != nil {
				return
			}
			c := pods[0].Manifest.Containers[0]
			if c.Image != tt.wantImg {
				t.Errorf("image %q, want %q", c.Image, tt.wantImg)
			}
			env := map[string]string{}
			for _, e := range c.Env {
				env[e.Name] = e.Value
			}
			if !reflect.DeepEqual(env, tt.wantEnv) {
				t.Errorf("env %v, want %v", env, tt.wantEnv)
			}
			var notes []string
			for _, n := range pods[0].Notes {
				notes = append(notes, n.Error())
			}
			if !reflect.DeepEqual(notes, tt.wantNotes) {
				t.Errorf("notes:\n got %q\nwant %q", notes, tt.wantNotes)
			}
		})
	}
}

func TestLoadEnvFiles(t *testing.T) {
	tests := []struct {
		name     string
		envFile  string
		files    mapFiles
		wantEnv  []manifest.EnvVar
		wantErrs []string
	}{
		{
			name:    "relative file, environment wins",
			envFile: "[conf/app.env]",
			files:   mapFiles{"conf/app.env": "A=from-file\nB=${BASE}/b\n", ".env": "BASE=/srv\n"},
			wantEnv: []manifest.EnvVar{{Name: "A", Value: "override"}, {Name: "B", Value: "/srv/b"}},
		},
		{
			name:    "optional and missing",
			envFile: "[{path: missing.env, required: false}]",
			wantEnv: []manifest.EnvVar{{Name: "A", Value: "override"}},
		},
		{
			name:     "required and missing",
			envFile:  "[missing.env]",
			wantErrs: []string{`apps:shop/compose.yaml: services.web.env_file[0]: missing.env: missing.env: file does not exist`},
		},
		{
			name:     "a host path",
			envFile:  "[/etc/shadow]",
			wantErrs: []string{`apps:shop/compose.yaml: services.web.env_file[0]: /etc/shadow: must be a file of the project (a relative path), not a host path`},
		},
		{
			name:     "leaving the project",
			envFile:  "[../other/.env]",
			wantErrs: []string{`apps:shop/compose.yaml: services.web.env_file[0]: ../other/.env: leaves the project folder`},
		},
		{
			// The parser names the line where it gave up: the quote opened
			// on line 2 runs to the end.
			name:     "a syntax error does not quote the line",
			envFile:  "[bad.env]",
			files:    mapFiles{"bad.env": "A=1\nPASSWORD=\"hunter2-secret\n"},
			wantErrs: []string{`apps:shop/compose.yaml: services.web.env_file[0]: bad.env: line 3: not valid env-file syntax (KEY=VALUE)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    env_file: " + tt.envFile + "\n    environment:\n      A: override\n"}
			for k, v := range tt.files {
				files[k] = v
			}
			pods, errs := load(t, files, compose.Options{})
			if !reflect.DeepEqual(errs, tt.wantErrs) {
				t.Fatalf("errors:\n got %q\nwant %q", errs, tt.wantErrs)
			}
			if tt.wantErrs == nil && !reflect.DeepEqual(pods[0].Manifest.Containers[0].Env, tt.wantEnv) {
				t.Errorf("env %v, want %v", pods[0].Manifest.Containers[0].Env, tt.wantEnv)
			}
			for _, e := range errs {
				if strings.Contains(e, "hunter2") {
					t.Errorf("an error shows a value: %s", e)
				}
			}
		})
	}
}

func TestLoadRefusesByName(t *testing.T) {
	tests := []struct {
		name     string
		files    mapFiles
		wantPods int
		wantErrs []string
	}{
		{
			name: "service keys not applied",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    cgroup_parent: /custom
    oom_kill_disable: true
    x-note: extensions are fine
`},
			wantPods: 1,
			wantErrs: []string{
				`apps:shop/compose.yaml: services.web.cgroup_parent: not supported by hostlet yet`,
				`apps:shop/compose.yaml: services.web.oom_kill_disable: not supported by hostlet yet`,
			},
		},
		{
			name: "a container name on replicas",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    container_name: web
    deploy: {replicas: 2}
`},
			// Compose's own check, word for word.
			wantErrs: []string{"apps:shop/compose.yaml: services.deploy.replicas: can't set container_name and web as container name must be unique: invalid compose project"},
		},
		{
			name: "build",
			files: mapFiles{"compose.yaml": `
services:
  web:
    build: ./web
  api:
    build:
      context: ./web
      ssh: [default]
`, "web/main.go": "package main\n"},
			wantPods: 2,
			wantErrs: []string{
				`apps:shop/compose.yaml: services.api.build.ssh: not supported by hostlet yet`,
				`apps:shop/compose.yaml: services.api.build.dockerfile: Dockerfile: no such file in the context`,
				`apps:shop/compose.yaml: services.web.build.dockerfile: Dockerfile: no such file in the context`,
			},
		},
		{
			name: "a key of an inactive profile is not refused",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
  debug:
    image: busybox
    profiles: [debug]
    privileged: true
`},
			wantPods: 1,
		},
		{
			name: "volume options",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    volumes: [{type: volume, source: data, target: /data, volume: {nocopy: true}}]
volumes:
  data: {driver: nfs, driver_opts: {o: addr=10.0.0.1}}
`},
			wantErrs: []string{
				`apps:shop/compose.yaml: volumes.data.driver_opts: a volume with driver options is a mount the engine makes on the host (an NFS share, a bind of any host folder), outside hostPathAllow: make the volume yourself and declare it external (listed in the host's policy.externalVolumes)`,
				`apps:shop/compose.yaml: volumes.data.driver: "nfs" is not supported (local)`,
			},
		},
		{
			name: "named volume options",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    volumes: [{type: volume, source: data, target: /data, volume: {nocopy: true}}]
volumes:
  data: {}
`},
			wantPods: 1,
			wantErrs: []string{`apps:shop/compose.yaml: services.web.volumes[0].volume: nocopy, subpath and labels are not supported yet`},
		},
		{
			name: "include",
			files: mapFiles{"compose.yaml": `
include: [../other/compose.yaml]
services:
  web: {image: busybox}
`},
			wantErrs: []string{
				`apps:shop/compose.yaml: ../other/compose.yaml: leaves the project folder`,
			},
		},
		{
			name:     "two project files",
			files:    mapFiles{"compose.yaml": "services: {}\n", "docker-compose.yml": "services: {}\n"},
			wantErrs: []string{`apps:shop: both compose.yaml and docker-compose.yml are here: keep one`},
		},
		{
			name: "a value that does not interpolate is not quoted",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    environment:
      PASSWORD: "hunter2${"
`},
			wantErrs: []string{`apps:shop/compose.yaml: error while interpolating services.web.environment.PASSWORD: invalid interpolation: a $ not followed by a variable name (write $$ for a literal $)`},
		},
		{
			// The pod is there to be validated too (every error at once),
			// refused by the schema's error.
			name: "schema error names file and key",
			files: mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    restart_policy: always
`},
			wantPods: 1,
			wantErrs: []string{`apps:shop/compose.yaml: services.web.restart_policy: not a Compose key (keys of your own start with x-)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods, errs := load(t, tt.files, compose.Options{})
			if len(pods) != tt.wantPods {
				t.Errorf("got %d pods, want %d", len(pods), tt.wantPods)
			}
			if !reflect.DeepEqual(errs, tt.wantErrs) {
				t.Errorf("errors:\n got %q\nwant %q", errs, tt.wantErrs)
			}
		})
	}
}

func TestLoadNetworks(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    networks:
      front:
      back: {aliases: [www, web]}
  api:
    image: busybox
    networks: [back, corp]
  db:
    image: busybox
networks:
  front: {}
  back: {internal: true}
  corp: {external: true, name: corp-lan}
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	got := map[string][]manifest.Network{}
	for _, p := range pods {
		got[p.Manifest.ID] = p.Manifest.Networks
	}
	want := map[string][]manifest.Network{
		"shop-api": {{Name: "shop_back", Aliases: []string{"api"}, Internal: true}, {Name: "corp-lan", Aliases: []string{"api"}, External: true}},
		"shop-db":  {{Name: "shop_default", Aliases: []string{"db"}}},
		"shop-web": {{Name: "shop_back", Aliases: []string{"web", "www"}, Internal: true}, {Name: "shop_front", Aliases: []string{"web"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("networks:\n got %+v\nwant %+v", got, want)
	}

	_, errs = load(t, mapFiles{"compose.yaml": `
services:
  web: {image: busybox, networks: {front: {mac_address: "02:42:ac:11:00:02"}}}
networks:
  front: {driver: overlay}
`}, compose.Options{})
	wantErrs := []string{
		`apps:shop/compose.yaml: networks.front.driver: "overlay" is not supported (bridge)`,
		`apps:shop/compose.yaml: services.web.networks.front.mac_address: not supported by hostlet yet`,
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", errs, wantErrs)
	}
}

func TestLoadNamedVolumes(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  db:
    image: postgres:16
    volumes: ["data:/var/lib/postgresql/data", "/run/tmp-anon", "backups:/backups:ro"]
  tool:
    image: busybox
    volumes: [{type: volume, source: data, target: /data, read_only: true}]
volumes:
  data: {}
  backups: {external: true, name: corp-backups}
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	db, tool := pods[0].Manifest, pods[1].Manifest
	wantVols := []manifest.Volume{{Name: "vol-0", DockerVolume: "shop_data"}, {Name: "anon-1"}, {Name: "vol-2", DockerVolume: "corp-backups", External: true}}
	wantMounts := []manifest.VolumeMount{{Name: "vol-0", MountPath: "/var/lib/postgresql/data"}, {Name: "anon-1", MountPath: "/run/tmp-anon"}, {Name: "vol-2", MountPath: "/backups", ReadOnly: true}}
	if !reflect.DeepEqual(db.Volumes, wantVols) || !reflect.DeepEqual(db.Containers[0].VolumeMounts, wantMounts) {
		t.Errorf("db: volumes %+v mounts %+v\nwant %+v %+v", db.Volumes, db.Containers[0].VolumeMounts, wantVols, wantMounts)
	}
	if len(tool.Volumes) != 1 || tool.Volumes[0].DockerVolume != "shop_data" || !tool.Containers[0].VolumeMounts[0].ReadOnly {
		t.Errorf("tool: volumes %+v mounts %+v, want shop_data read-only", tool.Volumes, tool.Containers[0].VolumeMounts)
	}
}

func TestLoadHealthAndOrder(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  db:
    image: postgres:16
    healthcheck:
      test: ["CMD", "pg_isready", "-U", "postgres"]
      interval: 2s
      timeout: 1500ms
      retries: 5
      start_period: 10s
  migrate:
    image: example.org/migrate:1
    depends_on: {db: {condition: service_healthy}}
  web:
    image: example.org/web:1
    healthcheck: {test: "curl -f localhost || exit 1"}
    depends_on:
      db: {condition: service_healthy}
      migrate: {condition: service_completed_successfully}
      cache: {condition: service_started}
  cache:
    image: redis:7
    deploy: {replicas: 2}
    healthcheck: {disable: true}
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	byID := map[string]manifest.Manifest{}
	for _, p := range pods {
		byID[p.Manifest.ID] = p.Manifest
	}
	if got, want := byID["shop-db"].Containers[0].Healthcheck, (&manifest.Healthcheck{Command: []string{"pg_isready", "-U", "postgres"}, IntervalSeconds: 2, TimeoutSeconds: 2, Retries: 5, StartPeriodSeconds: 10}); !reflect.DeepEqual(got, want) {
		t.Errorf("db healthcheck %+v, want %+v", got, want)
	}
	if got := byID["shop-web"].Containers[0].Healthcheck; got == nil || got.Shell != "curl -f localhost || exit 1" {
		t.Errorf("web healthcheck %+v, want the shell line", got)
	}
	if got := byID["shop-cache-1"].Containers[0].Healthcheck; got == nil || !got.Disable {
		t.Errorf("cache healthcheck %+v, want disabled", got)
	}
	want := []manifest.Dependency{
		{Pod: "shop-cache-1", Condition: manifest.DependencyStarted}, {Pod: "shop-cache-2", Condition: manifest.DependencyStarted},
		{Pod: "shop-db", Condition: manifest.DependencyHealthy}, {Pod: "shop-migrate", Condition: manifest.DependencyCompleted},
	}
	if got := byID["shop-web"].DependsOn; !reflect.DeepEqual(got, want) {
		t.Errorf("web dependsOn %+v\nwant %+v", got, want)
	}

	pods, errs = load(t, mapFiles{"compose.yaml": `
services:
  web: {image: busybox, depends_on: {db: {condition: service_healthy, restart: true}, cache: {condition: service_healthy}}}
  db: {image: busybox}
  cache: {image: busybox, healthcheck: {disable: true}}
`}, compose.Options{})
	wantErrs := []string{
		`apps:shop/compose.yaml: services.web.depends_on.cache.condition: service cache has its healthcheck disabled: nothing to be healthy by`,
		`apps:shop/compose.yaml: services.web.depends_on.db.restart: restarting a service when its dependency restarts is not supported yet`,
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", errs, wantErrs)
	}
	// A dependency without a healthcheck of its own: its image's is waited
	// for (Compose waits for it too), said in a note.
	var notes []string
	for _, p := range pods {
		for _, n := range p.Notes {
			notes = append(notes, n.Error())
		}
	}
	wantNotes := []string{`apps:shop/compose.yaml: services.web.depends_on.db.condition: service db sets no healthcheck: its image's HEALTHCHECK is waited for, and without one it counts as healthy once it runs`}
	if !reflect.DeepEqual(notes, wantNotes) {
		t.Errorf("notes:\n got %q\nwant %q", notes, wantNotes)
	}
}

func TestLoadProcessSettings(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": `
services:
  db:
    image: postgres:16
    user: "999:999"
    read_only: true
    init: true
    stop_signal: SIGINT
    shm_size: 256m
    cpus: 0.5
    pids_limit: 200
    group_add: [video, "44"]
    runtime: runc
  cache:
    image: redis:7
    deploy: {resources: {limits: {pids: 64}}}
`}, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	c := pods[1].Manifest.Containers[0]
	if c.User != "999:999" || !c.ReadOnly || !c.Init || c.StopSignal != "SIGINT" || c.ShmSize != 256<<20 || c.CPULimit != 500 || c.PidsLimit != 200 ||
		!reflect.DeepEqual(c.GroupAdd, []string{"video", "44"}) || c.Runtime != "runc" {
		t.Errorf("container %+v", c)
	}
	if got := pods[0].Manifest.Containers[0].PidsLimit; got != 64 {
		t.Errorf("cache: pidsLimit %d, want 64 from deploy.resources.limits.pids", got)
	}
	_, errs = load(t, mapFiles{"compose.yaml": `
services:
  db: {image: postgres:16, pids_limit: 100, deploy: {resources: {limits: {pids: 50}}}}
`}, compose.Options{})
	if want := []string{`apps:shop/compose.yaml: services.db: can't set distinct values on 'pids_limit' and 'deploy.resources.limits.pids': invalid compose project`}; !reflect.DeepEqual(errs, want) {
		t.Errorf("errors:\n got %q\nwant %q", errs, want)
	}
}

func TestLoadNamespaceSettings(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    hostname: mail.example.com
    domainname: example.com
    extra_hosts: ["db.internal:10.0.0.5", "cache.internal=10.0.0.6", "host.docker.internal:host-gateway"]
    dns: [1.1.1.1]
    dns_search: example.org
`}, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	m := pods[0].Manifest
	if m.Hostname != "mail.example.com" || m.Domainname != "example.com" ||
		!reflect.DeepEqual(m.ExtraHosts, []string{"cache.internal:10.0.0.6", "db.internal:10.0.0.5", "host.docker.internal:host-gateway"}) ||
		!reflect.DeepEqual(m.DNS, []string{"1.1.1.1"}) || !reflect.DeepEqual(m.DNSSearch, []string{"example.org"}) {
		t.Errorf("hostname %q hosts %q dns %q search %q", m.Hostname, m.ExtraHosts, m.DNS, m.DNSSearch)
	}
}

func TestLoadOverrideAndExtends(t *testing.T) {
	files := mapFiles{
		"compose.yaml": `
services:
  base:
    image: busybox
    profiles: [never]
    environment: {A: "1"}
  web:
    extends: base
    environment: {B: "2"}
`,
		"compose.override.yaml": `
services:
  web:
    image: busybox:1.36
    profiles: !reset []
`,
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	if len(pods) != 1 {
		t.Fatalf("got %d pods, want 1 (base is in an inactive profile)", len(pods))
	}
	c := pods[0].Manifest.Containers[0]
	if c.Image != "busybox:1.36" || len(c.Env) != 2 {
		t.Errorf("web: image %q env %v, want busybox:1.36 and A, B", c.Image, c.Env)
	}
}

func TestLoadProfiles(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  web: {image: busybox}
  debug: {image: busybox, profiles: [debug]}
`}
	for _, tt := range []struct {
		profiles []string
		want     int
	}{{nil, 1}, {[]string{"debug"}, 2}, {[]string{"*"}, 2}} {
		pods, errs := load(t, files, compose.Options{Host: compose.Host{Profiles: tt.profiles}})
		if len(errs) > 0 || len(pods) != tt.want {
			t.Errorf("profiles %q: %d pods (errors %q), want %d", tt.profiles, len(pods), errs, tt.want)
		}
	}
}

func TestLoadBytes(t *testing.T) {
	body := []byte("name: edge\nservices:\n  proxy:\n    image: busybox\n    env_file: [app.env]\n")
	if !project.LooksLikeCompose(body) {
		t.Fatal("a Compose body is not recognised")
	}
	if project.LooksLikeCompose([]byte("version: v1beta1\nid: web\ncontainers: []\n")) {
		t.Fatal("a native manifest is taken for Compose")
	}
	pods, err := compose.LoadBytes(context.Background(), body, compose.Options{Source: "edge-http"})
	errs := errorTexts(t, pods, err)
	want := []string{`edge-http: services.proxy.env_file[0]: app.env: app.env: a project delivered as one body has no files beside it: file does not exist`}
	if !reflect.DeepEqual(errs, want) {
		t.Errorf("errors:\n got %q\nwant %q", errs, want)
	}
	if len(pods) != 1 || pods[0].Manifest.ID != "edge-proxy" {
		t.Errorf("pods %+v", pods)
	}
}

// An error of the override file names the override file, not the main
// one.
func TestLoadOverrideErrorsNameTheirFile(t *testing.T) {
	files := mapFiles{
		"compose.yaml":          "services:\n  web: {image: busybox}\n",
		"compose.override.yaml": "services:\n  web: {restart_policy: always}\n",
	}
	_, errs := load(t, files, compose.Options{})
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "apps:shop/compose.override.yaml: ") {
		t.Errorf("errors %q, want one of apps:shop/compose.override.yaml", errs)
	}
	files["compose.override.yaml"] = "services:\n  web: [not, a, map\n"
	_, errs = load(t, files, compose.Options{})
	if len(errs) != 1 || !strings.HasPrefix(errs[0], "apps:shop/compose.override.yaml") {
		t.Errorf("errors %q, want one of apps:shop/compose.override.yaml", errs)
	}
}

// TestLoadTmpfs: a service's tmpfs entries (with size, mode and exec or
// noexec among the options the engine sets anyway) and its volumes of
// type tmpfs are the container's tmpfs mounts; an option hostlet does not
// apply, or a read-only tmpfs, is refused naming the entry.
func TestLoadTmpfs(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    tmpfs:
      - /run:size=16M,mode=1750,exec
      - /tmp:size=16M,mode=1777,noexec
      - /var/cache
    volumes:
      - {type: tmpfs, target: /scratch, tmpfs: {size: 1048576, mode: 0o700}}
`}, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	want := []manifest.Tmpfs{
		{MountPath: "/run", SizeBytes: 16 << 20, Mode: 0o1750, Exec: true},
		{MountPath: "/tmp", SizeBytes: 16 << 20, Mode: 0o1777},
		{MountPath: "/var/cache"},
		{MountPath: "/scratch", SizeBytes: 1 << 20, Mode: 0o700},
	}
	c := pods[0].Manifest.Containers[0]
	if !reflect.DeepEqual(c.Tmpfs, want) || len(c.VolumeMounts) != 0 {
		t.Errorf("tmpfs %+v mounts %+v, want %+v and no volume", c.Tmpfs, c.VolumeMounts, want)
	}
	if k := pods[0].Keys["containers[0].tmpfs[3]"]; k != "services.web.volumes[0]" {
		t.Errorf("containers[0].tmpfs[3] is named %q, want services.web.volumes[0]", k)
	}
	_, errs = load(t, mapFiles{"compose.yaml": `
services:
  web:
    image: busybox
    tmpfs: ["/run:uid=1000", "/tmp:size=lots", "/x:mode=999", "/v:exec=false"]
    volumes: [{type: tmpfs, target: /ro, read_only: true}]
`}, compose.Options{})
	wantErrs := []string{
		`apps:shop/compose.yaml: services.web.tmpfs[0]: option "uid=1000" is not supported (size=..., mode=..., exec, noexec, nosuid, nodev, rw)`,
		`apps:shop/compose.yaml: services.web.tmpfs[1]: size "lots" is not a size (16m, 1g, ...)`,
		`apps:shop/compose.yaml: services.web.tmpfs[2]: mode "999" is not octal permission bits (1777, 0750, ...)`,
		`apps:shop/compose.yaml: services.web.tmpfs[3]: option "exec=false" is not supported (size=..., mode=..., exec, noexec, nosuid, nodev, rw)`,
		`apps:shop/compose.yaml: services.web.volumes[0].read_only: a read-only tmpfs is always empty: leave read_only out`,
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", errs, wantErrs)
	}
}

// TestLoadDeployMode: replicated is the replicas given, global is one pod
// (one per node, and a host is one node, as in docker compose); a job
// mode is refused naming it.
func TestLoadDeployMode(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": `
services:
  web: {image: busybox, deploy: {mode: replicated, replicas: 2}}
  agent: {image: busybox, deploy: {mode: global, replicas: 3}}
`}, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	var ids []string
	for _, p := range pods {
		ids = append(ids, p.Manifest.ID)
	}
	if want := []string{"shop-agent", "shop-web-1", "shop-web-2"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("pods %q, want %q", ids, want)
	}
	if n := pods[0].Notes; len(n) != 1 || !strings.Contains(n[0].Error(), "services.agent.deploy.mode: global: one pod on a host (one per node), not the replicas given") {
		t.Errorf("agent notes %v, want the replicas not made said", n)
	}
	_, errs = load(t, mapFiles{"compose.yaml": "services:\n  once: {image: busybox, deploy: {mode: replicated-job}}\n"}, compose.Options{})
	if want := []string{`apps:shop/compose.yaml: services.once.deploy.mode: "replicated-job": jobs are not supported yet (replicated or global)`}; !reflect.DeepEqual(errs, want) {
		t.Errorf("errors:\n got %q\nwant %q", errs, want)
	}
}

// TestLoadLinks: a link's alias is an alias of the linked service on the
// networks both join; a link without an alias adds nothing (the service's
// name resolves already); a link to a service sharing no network, or not
// in the project, is refused naming it.
func TestLoadLinks(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": `
services:
  web: {image: busybox, links: ["db:database", cache], networks: [front, back]}
  db: {image: busybox, networks: [back]}
  cache: {image: busybox, networks: [back]}
networks: {front: {}, back: {}}
`}, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	aliases := map[string][]string{}
	for _, p := range pods {
		for _, n := range p.Manifest.Networks {
			aliases[p.Manifest.ID+"@"+n.Name] = n.Aliases
		}
	}
	want := map[string][]string{
		"shop-web@shop_back": {"web"}, "shop-web@shop_front": {"web"},
		"shop-db@shop_back": {"db", "database"}, "shop-cache@shop_back": {"cache"},
	}
	if !reflect.DeepEqual(aliases, want) {
		t.Errorf("aliases %v, want %v", aliases, want)
	}
	// compose-go makes each link a dependency that restarts the service
	// with its target: the wait is kept, the restart said in a note.
	var notes []string
	for _, p := range pods {
		if p.Manifest.ID == "shop-web" {
			for _, n := range p.Notes {
				notes = append(notes, n.Error())
			}
			if len(p.Manifest.DependsOn) != 2 {
				t.Errorf("web depends on %+v, want cache and db", p.Manifest.DependsOn)
			}
		}
	}
	wantNotes := []string{
		`apps:shop/compose.yaml: services.web.depends_on.cache: made by links: the service waits for cache to start, and is not restarted when cache restarts`,
		`apps:shop/compose.yaml: services.web.depends_on.db: made by links: the service waits for db to start, and is not restarted when db restarts`,
	}
	if !reflect.DeepEqual(notes, wantNotes) {
		t.Errorf("notes:\n got %q\nwant %q", notes, wantNotes)
	}
	_, errs = load(t, mapFiles{"compose.yaml": `
services:
  web: {image: busybox, links: ["db:database"], networks: [front]}
  db: {image: busybox, networks: [back]}
  host: {image: busybox, network_mode: host, links: [db]}
networks: {front: {}, back: {}}
`}, compose.Options{})
	wantErrs := []string{
		`apps:shop/compose.yaml: services.host.links[0]: service db shares no network with host: a link is an alias on a network both join`,
		`apps:shop/compose.yaml: services.web.links[0]: service db shares no network with web: a link is an alias on a network both join`,
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", errs, wantErrs)
	}
	// One name, one service: an alias another service already answers
	// to, or that two links give two services, is refused on the linking
	// service (never on the linked one), as is an alias that is no DNS
	// label.
	_, errs = load(t, mapFiles{"compose.yaml": `
services:
  app: {image: busybox, links: ["db:mysql", "db:cache", "db:Bad_Alias"]}
  worker: {image: busybox, links: ["olddb:mysql"]}
  db: {image: busybox}
  olddb: {image: busybox}
  cache: {image: busybox}
`}, compose.Options{})
	wantErrs = []string{
		`apps:shop/compose.yaml: services.app.links[1]: alias "cache" is already service cache's name on network default: one name, one service`,
		`apps:shop/compose.yaml: services.app.links[2]: alias "Bad_Alias" is not a DNS label (lowercase letters, digits and '-')`,
		`apps:shop/compose.yaml: services.worker.links[0]: alias "mysql" is already service db's name on network default: one name, one service`,
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", errs, wantErrs)
	}
	// The engine's DNS ignores letter case; and links never take the
	// linked pod past the names validation allows it.
	links := make([]string, 16)
	for i := range links {
		links[i] = fmt.Sprintf("%q", fmt.Sprintf("db:a%d", i))
	}
	_, errs = load(t, mapFiles{"compose.yaml": `
services:
  app: {image: busybox, links: ["db:cache"]}
  Cache: {image: busybox}
  many: {image: busybox, links: [` + strings.Join(links, ", ") + `]}
  db: {image: busybox}
`}, compose.Options{})
	wantErrs = []string{
		`apps:shop/compose.yaml: services.app.links[0]: alias "cache" is already service Cache's name on network default: one name, one service`,
		`apps:shop/compose.yaml: services.many.links[15]: service db has 16 names on network default already, the most a pod may have`,
	}
	if !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("errors:\n got %q\nwant %q", errs, wantErrs)
	}
	if compose.MaxAliases != validate.MaxAliases {
		t.Errorf("compose.MaxAliases %d, validate.MaxAliases %d: one bound", compose.MaxAliases, validate.MaxAliases)
	}
}

// TestSchemaErrorHidesNothing: a key the schema refuses (compose-go says
// only the first) no longer hides the rest of what is wrong: hostlet's
// own refusals of the project's services and validation's policy
// refusals are said beside it, and every pod of the project is refused.
func TestSchemaErrorHidesNothing(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": `
services:
  web:
    imagee: busybox
    image: busybox
    privileged: true
    cgroup_parent: x
  db:
    image: postgres:16
`}, compose.Options{})
	if len(pods) != 2 {
		t.Fatalf("pods %d, want 2 (every service, each refused), errors %q", len(pods), errs)
	}
	for _, p := range pods {
		if len(p.Errors) == 0 || !strings.Contains(p.Errors[0].Error(), "services.web.imagee: not a Compose key") {
			t.Errorf("pod %s: errors %v, want the schema's first", p.Manifest.ID, p.Errors)
		}
	}
	all := strings.Join(errs, "\n")
	if !strings.Contains(all, "services.web.cgroup_parent: not supported by hostlet yet") {
		t.Errorf("hostlet's own refusal hidden by the schema's:\n%s", all)
	}
	var web manifest.Sourced
	for _, p := range pods {
		if p.Manifest.ID == "shop-web" {
			web = p
		}
	}
	if err := validate.Manifest(web, validate.Options{}); err == nil || !strings.Contains(err.Error(), "services.web.privileged") {
		t.Errorf("validation of the refused pod: %v, want the privileged refusal said too", err)
	}
}

// TestSchemaErrorWithoutPods: a project the schema refuses stays refused
// with the schema's error when loading it again makes no pod to carry it
// (an inactive profile, a scale of 0), and when that second load fails on
// what the schema would have refused first.
func TestSchemaErrorWithoutPods(t *testing.T) {
	for name, file := range map[string]string{
		"inactive profile":  "services:\n  web:\n    image: busybox\n    profiles: [dev]\n    imagee: x\n",
		"scale 0":           "services:\n  web: {image: busybox, scale: 0, imagee: 1}\n",
		"links as a map":    "services:\n  web: {image: busybox, links: {a: b}}\n",
		"networks a number": "services:\n  web: {image: busybox, networks: 5}\n",
	} {
		t.Run(name, func(t *testing.T) {
			pods, errs := load(t, mapFiles{"compose.yaml": file}, compose.Options{})
			if len(pods) != 0 || len(errs) == 0 || strings.Contains(strings.Join(errs, "\n"), "the Compose library failed") {
				t.Errorf("pods %d, errors %q: want none, and the schema's own error", len(pods), errs)
			}
		})
	}
}
