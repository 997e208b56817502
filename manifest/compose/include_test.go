package compose_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

// extends.file reads another file of the project, as it is at the
// source's revision, with its relative paths taken from its own folder
// (an extends.file in it too); nothing outside the project can be named.
func TestLoadExtendsFile(t *testing.T) {
	files := mapFiles{
		"compose.yaml": `
services:
  web:
    extends: {file: common/base.yaml, service: base}
    environment: {MODE: prod}
  db:
    extends: {file: common/base.yaml, service: db}
`,
		"common/base.yaml": `
services:
  base:
    image: busybox:${TAG}
    env_file: [base.env]
    volumes: ["./app.conf:/etc/app.conf"]
  db:
    extends: {file: ../db/compose.yaml, service: db}
`,
		"common/base.env": "FROM_BASE=1\n",
		"common/app.conf": "listen 80\n",
		"db/compose.yaml": "services:\n  db:\n    image: postgres:16\n    volumes: ['./init.sql:/docker-entrypoint-initdb.d/init.sql']\n",
		"db/init.sql":     "select 1;\n",
		".env":            "TAG=1.36\n",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	byID := podIndex(pods)
	web, ok := byID["shop-web"]
	db, ok2 := byID["shop-db"]
	if !ok || !ok2 {
		t.Fatalf("pods %v, want shop-web and shop-db", byID)
	}
	w := pods[web].Manifest
	if w.Containers[0].Image != "busybox:1.36" {
		t.Errorf("web image %q, want busybox:1.36 (interpolated from the project's .env)", w.Containers[0].Image)
	}
	env := map[string]string{}
	for _, e := range w.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env["FROM_BASE"] != "1" || env["MODE"] != "prod" {
		t.Errorf("web env %v, want FROM_BASE from common/base.env and MODE", env)
	}
	if got := filesMounts(t, w)["/etc/app.conf"]; got.source != "common/app.conf" || got.items[""] != "listen 80\n" {
		t.Errorf("web's bind %+v, want common/app.conf", got)
	}
	if got := filesMounts(t, pods[db].Manifest)["/docker-entrypoint-initdb.d/init.sql"]; got.source != "db/init.sql" {
		t.Errorf("db's bind %+v, want db/init.sql (volumes %+v)", got, pods[db].Manifest.Volumes)
	}
}

func TestLoadReferencesRefused(t *testing.T) {
	tests := []struct {
		name    string
		files   mapFiles
		wantErr string
	}{
		{"a host file", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, extends: {file: /etc/hostlet-probe.yaml, service: x}}\n"},
			"/etc/hostlet-probe.yaml: must be a file of the project (a relative path), not a host path"},
		{"out of the project", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, extends: {file: ../other/compose.yaml, service: x}}\n"},
			"../other/compose.yaml: leaves the project folder"},
		{"include env_file", mapFiles{"compose.yaml": "include: [{path: db/compose.yaml, env_file: db/.env}]\nservices:\n  web: {image: busybox}\n", "db/compose.yaml": "services: {}\n"},
			"include[0].env_file: not supported"},
		{"include project_directory", mapFiles{"compose.yaml": "include: [{path: db/compose.yaml, project_directory: /etc}]\nservices:\n  web: {image: busybox}\n", "db/compose.yaml": "services: {}\n"},
			"include[0].project_directory: not supported"},
		{"include a host file", mapFiles{"compose.yaml": "include: [/etc/hostlet-probe.yaml]\nservices:\n  web: {image: busybox}\n"},
			"/etc/hostlet-probe.yaml: must be a file of the project (a relative path), not a host path"},
		{"an include's bind out of the project", mapFiles{"compose.yaml": "include: [db/compose.yaml]\nservices:\n  web: {image: busybox}\n", "db/compose.yaml": "services:\n  db: {image: busybox, volumes: ['../../x:/x']}\n"},
			"db/compose.yaml: services.db.volumes[0]: ../../x leaves the project folder"},
		{"missing", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, extends: {file: base.yaml, service: x}}\n"},
			"base.yaml: base.yaml: file does not exist"},
		{"memory file name hidden", mapFiles{"compose.yaml": "services:\n  web: {image: busybox, extends: {file: base.yaml, service: nope}}\n", "base.yaml": "services:\n  base: {image: busybox}\n"},
			`not found in base.yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := load(t, tt.files, compose.Options{})
			text := strings.Join(errs, "\n")
			if !strings.Contains(text, tt.wantErr) || strings.Contains(text, "/proc/self/fd") || strings.Contains(text, "hostlet-compose-") {
				t.Errorf("errors %q, want %q (and no memory file's path)", errs, tt.wantErr)
			}
		})
	}
}

// include loads another file of the project as Compose does: its
// services, volumes and networks join this project, its relative paths
// are from its own folder, its folder's .env interpolates it.
func TestLoadInclude(t *testing.T) {
	files := mapFiles{
		"compose.yaml":    "include: [db/compose.yaml]\nservices:\n  web:\n    image: busybox\n    depends_on: [db]\n",
		"db/compose.yaml": "services:\n  db:\n    image: postgres:${PG}\n    env_file: [db.env]\n    volumes: ['./init.sql:/docker-entrypoint-initdb.d/init.sql', 'data:/var/lib/postgresql/data']\nvolumes:\n  data: {}\n",
		"db/.env":         "PG=16\n",
		"db/db.env":       "POSTGRES_DB=shop\n",
		"db/init.sql":     "select 1;\n",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	byID := podIndex(pods)
	i, ok := byID["shop-db"]
	if !ok || len(pods) != 2 {
		t.Fatalf("pods %v, want shop-web and shop-db", byID)
	}
	db := pods[i].Manifest
	if db.Containers[0].Image != "postgres:16" {
		t.Errorf("db image %q, want postgres:16 (db/.env)", db.Containers[0].Image)
	}
	if got := filesMounts(t, db)["/docker-entrypoint-initdb.d/init.sql"]; got.source != "db/init.sql" {
		t.Errorf("db's bind %+v, want db/init.sql (volumes %+v)", got, db.Volumes)
	}
	if len(db.Containers[0].Env) != 1 || db.Containers[0].Env[0].Value != "shop" {
		t.Errorf("db env %+v, want POSTGRES_DB from db/db.env", db.Containers[0].Env)
	}
	named := false
	for _, v := range db.Volumes {
		named = named || v.DockerVolume == "shop_data"
	}
	if !named {
		t.Errorf("db volumes %+v, want the project's volume shop_data", db.Volumes)
	}
}

// An include in an included file of another folder is from that folder,
// as Compose has it.
func TestLoadNestedInclude(t *testing.T) {
	files := mapFiles{
		"compose.yaml":    "include: [db/compose.yaml]\nservices:\n  web: {image: busybox}\n",
		"db/compose.yaml": "include: [extra.yaml]\nservices:\n  db: {image: postgres}\n",
		"db/extra.yaml":   "services:\n  extra: {image: from-db-extra}\n",
		"extra.yaml":      "services:\n  extra: {image: from-root-extra}\n",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	for _, p := range pods {
		if p.Manifest.ID == "shop-extra" && p.Manifest.Containers[0].Image != "from-db-extra" {
			t.Errorf("extra: image %q, want from-db-extra (db/extra.yaml, beside the file including it)", p.Manifest.Containers[0].Image)
		}
	}
	if len(pods) != 3 {
		t.Errorf("%d pods, want 3", len(pods))
	}
}

// podIndex is the index of each pod in pods, by id.
func podIndex(pods []manifest.Sourced) map[string]int {
	out := map[string]int{}
	for i, p := range pods {
		out[p.Manifest.ID] = i
	}
	return out
}
