package sources

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// A folder holding compose.yaml is a Compose project: its services are
// pods beside the native manifests, nothing below it is read as a
// manifest, and every file it reads is part of the revision.
func TestReadTreeComposeProject(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "native.yaml"), "version: v1beta1\nid: native\ncontainers: [{name: app, image: busybox}]\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "compose.yaml"), "services:\n  web:\n    image: busybox:${TAG}\n    env_file: [conf/web.env]\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", ".env"), "TAG=1.36\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "conf", "web.env"), "MODE=prod\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "conf", "data.yaml"), "not: a manifest\n")
	ctx := context.Background()
	r := composetest.Renderer(t, project.Host{})
	read := func() (ids []string, rev string, errs []string) {
		t.Helper()
		snap, err := ReadTree(ctx, dir, []string{"."}, "local", r)
		for _, e := range validate.Flatten(err) {
			errs = append(errs, e.Error())
		}
		for _, m := range snap.Manifests {
			ids = append(ids, m.Manifest.ID+"@"+m.Origin.File+"="+m.Manifest.Containers[0].Image)
			for _, e := range m.Errors {
				errs = append(errs, e.Error())
			}
		}
		return ids, snap.Revision, errs
	}
	ids, rev1, errs := read()
	want := []string{"native@native.yaml=busybox", "shop-web@shop/compose.yaml=busybox:1.36"}
	if len(errs) > 0 || !reflect.DeepEqual(ids, want) {
		t.Fatalf("pods %q errors %q, want %q and none", ids, errs, want)
	}
	testkit.WriteFile(t, filepath.Join(dir, "shop", "conf", "web.env"), "MODE=staging\n")
	if _, rev2, _ := read(); rev2 == rev1 {
		t.Errorf("revision %s unchanged after an env_file changed", rev2)
	}

	// A link out of the project is refused, and its target never shown.
	secret := filepath.Join(t.TempDir(), "secret.env")
	testkit.WriteFile(t, secret, "PASSWORD=hunter2\n")
	if err := os.Remove(filepath.Join(dir, "shop", "conf", "web.env")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "shop", "conf", "web.env")); err != nil {
		t.Fatal(err)
	}
	_, _, errs = read()
	if len(errs) != 1 || !strings.Contains(errs[0], "local:shop/compose.yaml: services.web.env_file[0]: conf/web.env: ") || strings.Contains(errs[0], "hunter2") {
		t.Fatalf("errors %q, want one naming the env_file and not its content", errs)
	}
}

// A project at the root of the path takes the folder's name.
func TestReadTreeProjectAtTheRoot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "My.Shop")
	testkit.WriteFile(t, filepath.Join(dir, "docker-compose.yml"), "services:\n  web: {image: busybox}\n")
	r := composetest.Renderer(t, project.Host{})
	for _, paths := range [][]string{{"."}, {"docker-compose.yml"}} {
		snap, err := ReadTree(context.Background(), dir, paths, "local", r)
		if err != nil || len(snap.Manifests) != 1 || snap.Manifests[0].Manifest.ID != "myshop-web" || snap.Manifests[0].Origin.File != "docker-compose.yml" {
			t.Errorf("paths %q: %+v, %v; want pod myshop-web from docker-compose.yml", paths, snap.Manifests, err)
		}
	}
}

// A path naming a Compose file by a name of its own is that project's
// Compose file, as `docker compose -f` takes it: the folder is the
// project (its .env interpolates), no other Compose file and no override
// is read, and which file it is counts in the revision. A native manifest
// named by its path stays a native manifest.
func TestReadTreeComposeFileByItsOwnName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shop")
	testkit.WriteFile(t, filepath.Join(dir, "docker-compose.prod.yml"), "services:\n  web: {image: \"busybox:${TAG}\"}\n")
	testkit.WriteFile(t, filepath.Join(dir, "docker-compose.dev.yml"), "services:\n  dev: {image: busybox}\n")
	testkit.WriteFile(t, filepath.Join(dir, "compose.yaml"), "services:\n  other: {image: busybox}\n")
	testkit.WriteFile(t, filepath.Join(dir, "compose.override.yaml"), "services:\n  web: {image: busybox:override}\n")
	testkit.WriteFile(t, filepath.Join(dir, ".env"), "TAG=1.36\n")
	testkit.WriteFile(t, filepath.Join(dir, "pod.yaml"), "version: v1beta1\nid: native\ncontainers: [{name: app, image: busybox}]\n")
	// A manifest's name is no Compose name: whatever it holds, it is read
	// as a manifest, and its folder (here the host's secret) is no
	// project whose files its services could mount.
	testkit.WriteFile(t, filepath.Join(dir, "app.yaml"), "services:\n  web:\n    image: busybox\n    configs: [c]\nconfigs:\n  c: {file: ./secret.txt}\n")
	testkit.WriteFile(t, filepath.Join(dir, "secret.txt"), "hunter2-host-secret\n")
	r := composetest.Renderer(t, project.Host{})
	revs := map[string]string{}
	for _, tt := range []struct{ path, want string }{
		{"docker-compose.prod.yml", "shop-web@docker-compose.prod.yml=busybox:1.36"},
		{"docker-compose.dev.yml", "shop-dev@docker-compose.dev.yml=busybox"},
		{"pod.yaml", "native@pod.yaml=busybox"},
	} {
		snap, err := ReadTree(context.Background(), dir, []string{tt.path}, "local", r)
		var got []string
		for _, m := range snap.Manifests {
			got = append(got, m.Manifest.ID+"@"+m.Origin.File+"="+m.Manifest.Containers[0].Image)
		}
		if err != nil || !reflect.DeepEqual(got, []string{tt.want}) {
			t.Errorf("path %s: pods %q, %v; want %s", tt.path, got, err, tt.want)
		}
		revs[tt.path] = snap.Revision
	}
	if revs["docker-compose.prod.yml"] == revs["docker-compose.dev.yml"] {
		t.Error("two Compose files of one folder give one revision")
	}
	snap, err := ReadTree(context.Background(), dir, []string{"app.yaml"}, "local", r)
	if err == nil || !strings.Contains(err.Error(), "services: unknown field") || len(snap.Manifests) != 0 {
		t.Errorf("app.yaml holding services: %d pods, %v; want it read as a manifest (services: unknown field)", len(snap.Manifests), err)
	}
}

// One body (HTTP, etcd) with a top-level services key is a Compose
// project named by its name key, else by the etcd key or the source.
func TestDecodeBodyCompose(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		origin manifest.Origin
		want   string
	}{
		{"etcd key", "services:\n  web: {image: busybox}\n", manifest.Origin{Source: "fleet", File: "/hostlet/hosts/h1/shop.yaml"}, "shop-web@fleet:/hostlet/hosts/h1/shop.yaml"},
		{"http body", "services:\n  web: {image: busybox}\n", manifest.Origin{Source: "edge"}, "edge-web@edge"},
		{"name key", "name: blog\nservices:\n  web: {image: busybox}\n", manifest.Origin{Source: "edge"}, "blog-web@edge"},
		{"native", "version: v1beta1\nid: web\ncontainers: [{name: app, image: busybox}]\n", manifest.Origin{Source: "edge"}, "web@edge"},
	}
	r := composetest.Renderer(t, project.Host{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := decodeBody(context.Background(), []byte(tt.body), tt.origin, r)
			if err != nil || len(ms) != 1 {
				t.Fatalf("%d manifests, error %v", len(ms), err)
			}
			if got := ms[0].Manifest.ID + "@" + ms[0].Origin.String(); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// A project file's executable bit reaches the files volume that mounts
// it, and changing only the bit is a new revision.
func TestReadTreeProjectFileModes(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "shop", "compose.yaml"), "services:\n  web:\n    image: busybox\n    volumes: ['./run.sh:/run.sh', './conf:/etc/conf']\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "run.sh"), "#!/bin/sh\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "conf", "app.conf"), "listen 80\n")
	r := composetest.Renderer(t, project.Host{})
	read := func() (map[string]uint32, string) {
		t.Helper()
		snap, err := ReadTree(context.Background(), dir, []string{"."}, "local", r)
		if err != nil || len(snap.Manifests) != 1 || len(snap.Manifests[0].Errors) > 0 {
			t.Fatalf("read: %v %+v", err, snap.Manifests)
		}
		modes := map[string]uint32{}
		for _, v := range snap.Manifests[0].Manifest.Volumes {
			for _, it := range v.Files.Items {
				modes[v.Files.Source+"/"+it.Path] = it.ItemMode()
			}
		}
		return modes, snap.Revision
	}
	modes, rev1 := read()
	if want := map[string]uint32{"run.sh/": 0o444, "conf/app.conf": 0o444}; !reflect.DeepEqual(modes, want) {
		t.Fatalf("modes %v, want %v", modes, want)
	}
	if err := os.Chmod(filepath.Join(dir, "shop", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	modes, rev2 := read()
	if modes["run.sh/"] != manifest.FileModeExe || rev2 == rev1 {
		t.Errorf("after chmod +x: mode %#o, revision changed %v; want %#o and a new revision", modes["run.sh/"], rev2 != rev1, manifest.FileModeExe)
	}
}

// extends.file reads another file of the project through the helper:
// the bundle's, handed to compose-go from memory.
func TestReadTreeProjectExtendsFile(t *testing.T) {
	dir := t.TempDir()
	testkit.WriteFile(t, filepath.Join(dir, "shop", "compose.yaml"), "services:\n  web:\n    extends: {file: common/base.yaml, service: base}\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "common", "base.yaml"), "services:\n  base:\n    image: busybox:1.36\n    volumes: ['./app.conf:/etc/app.conf']\n")
	testkit.WriteFile(t, filepath.Join(dir, "shop", "common", "app.conf"), "listen 80\n")
	snap, err := ReadTree(context.Background(), dir, []string{"."}, "local", composetest.Renderer(t, project.Host{}))
	if err != nil || len(snap.Manifests) != 1 || len(snap.Manifests[0].Errors) > 0 {
		t.Fatalf("read: %v %+v", err, snap.Manifests)
	}
	m := snap.Manifests[0].Manifest
	if m.Containers[0].Image != "busybox:1.36" || len(m.Volumes) != 1 || m.Volumes[0].Files == nil || m.Volumes[0].Files.Source != "common/app.conf" {
		t.Errorf("web: image %q volumes %+v, want busybox:1.36 from common/base.yaml and common/app.conf bound", m.Containers[0].Image, m.Volumes)
	}
}

// TestComposeExtendsNeverReadsAHostFile (outside review, promise 1:
// nothing outside the project is read), end to end through the real
// helper: an HTTP body (or a file in a repository) whose second YAML
// document extends a service of a host file gets that file read by
// hostlet-compose and its environment copied into the attacker's pod.
func TestComposeExtendsNeverReadsAHostFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "compose.yaml")
	testkit.WriteFile(t, outside, "services:\n  db:\n    image: postgres\n    environment: {POSTGRES_PASSWORD: s3cr3t-from-outside}\n")
	body := "services: {}\n---\nservices:\n  web:\n    image: busybox\n    extends: {file: " + outside + ", service: db}\n"
	r := composetest.Renderer(t, project.Host{})
	check := func(t *testing.T, ms []manifest.Sourced) {
		t.Helper()
		for _, m := range ms {
			for _, e := range m.Manifest.Containers[0].Env {
				if strings.Contains(e.Value, "s3cr3t") {
					t.Errorf("pod %s has %s=%s, read from %s outside the source", m.Manifest.ID, e.Name, e.Value, outside)
				}
			}
		}
	}
	t.Run("http body", func(t *testing.T) {
		ms, _ := decodeBody(context.Background(), []byte(body), manifest.Origin{Source: "edge"}, r)
		check(t, ms)
	})
	t.Run("file source", func(t *testing.T) {
		dir := t.TempDir()
		testkit.WriteFile(t, filepath.Join(dir, "shop", "compose.yaml"), body)
		snap, _ := ReadTree(context.Background(), dir, []string{"."}, "local", r)
		check(t, snap.Manifests)
	})
}

// TestComposeProjectLinksOutOfTheSourceNeverOpened (outside review):
// promise 1 holds for the bundle itself: links out of the source folder
// are bundled as errors and never opened (passes; kept as a guard).
func TestComposeProjectLinksOutOfTheSourceNeverOpened(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	testkit.WriteFile(t, filepath.Join(outside, "secret.env"), "PASSWORD=hunter2\n")
	testkit.WriteFile(t, filepath.Join(outside, "compose.yaml"), "services:\n  web: {image: busybox, environment: {PASSWORD: hunter2}}\n")
	testkit.WriteFile(t, filepath.Join(dir, "a", "compose.yaml"), "services:\n  web: {image: busybox, env_file: [d/secret.env, rel.env]}\n")
	testkit.WriteFile(t, filepath.Join(dir, "c", "compose.yaml"), "services:\n  web: {image: busybox, environment: [PASSWORD]}\n")
	for link, target := range map[string]string{
		"c/.env":    filepath.Join(outside, "secret.env"),
		"a/d":       outside,
		"a/rel.env": "../../" + filepath.Base(outside) + "/secret.env",
		"b":         outside, // a project folder that is a link
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	r := composetest.Renderer(t, project.Host{})
	snap, err := ReadTree(context.Background(), dir, []string{"."}, "local", r)
	var texts []string
	for _, e := range validate.Flatten(err) {
		texts = append(texts, e.Error())
	}
	for _, m := range snap.Manifests {
		for _, e := range m.Errors {
			texts = append(texts, e.Error())
		}
		for _, c := range m.Manifest.Containers {
			for _, e := range c.Env {
				if strings.Contains(e.Value, "hunter2") {
					t.Errorf("pod %s has %s from outside", m.Manifest.ID, e.Name)
				}
			}
		}
	}
	t.Logf("errors: %q", texts)
	for _, s := range texts {
		if strings.Contains(s, "hunter2") {
			t.Errorf("error shows outside content: %s", s)
		}
	}
}
