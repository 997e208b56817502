package gitsource_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// A folder of the commit holding compose.yaml is a Compose project: its
// services are pods, its .env interpolates (the host's compose.env over
// it), and nothing below it is read as native manifests.
func TestComposeProjectInACommit(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	commit := repo.Change("compose", map[string]string{
		"manifests/native.yaml":            podYAML("native", "1"),
		"manifests/shop/compose.yaml":      "services:\n  web:\n    image: busybox:${TAG}\n    env_file: [conf/web.env]\n  worker:\n    image: busybox\n",
		"manifests/shop/.env":              "TAG=1.36\n",
		"manifests/shop/conf/web.env":      "MODE=prod\n",
		"manifests/shop/conf/not-pod.yaml": "this: is data, not a manifest\n",
		"manifests/shop/sub/compose.yaml":  "services: {inner: {image: busybox}}\n",
	})
	repo.Push()
	cfg := gitConfig(repo.FileURL())
	snap, err := gitsource.New(cfg, t.TempDir(), slog.New(slog.DiscardHandler)).
		WithCompose(composetest.Renderer(t, project.Host{Env: map[string]string{"TAG": "1.37"}})).Read(context.Background())
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if snap.Revision != commit {
		t.Errorf("revision %s, want %s", snap.Revision, commit)
	}
	var got []string
	for _, s := range snap.Manifests {
		got = append(got, s.Manifest.ID+"@"+s.Origin.File)
	}
	want := []string{"native@manifests/native.yaml", "shop-web@manifests/shop/compose.yaml", "shop-worker@manifests/shop/compose.yaml"}
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pods %q, want %q", got, want)
	}
	res := validate.Set([]validate.Source{snap}, validate.Options{})
	if err := res.Err(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	for _, s := range snap.Manifests {
		if s.Manifest.ID != "shop-web" {
			continue
		}
		c := s.Manifest.Containers[0]
		if c.Image != "busybox:1.37" || !reflect.DeepEqual(c.Env, []manifest.EnvVar{{Name: "MODE", Value: "prod"}}) {
			t.Errorf("web: image %q env %v, want busybox:1.37 (compose.env over .env) and MODE from conf/web.env", c.Image, c.Env)
		}
	}
}

// A configured path naming a Compose file of the commit by a name of its
// own is that project's only Compose file (no override read); a native
// manifest named by its path stays one.
func TestComposeFileByItsOwnNameInACommit(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	repo.Change("named", map[string]string{
		"manifests/shop/docker-compose.prod.yml": "services:\n  web: {image: \"busybox:${TAG}\"}\n",
		"manifests/shop/compose.yaml":            "services:\n  other: {image: busybox}\n",
		"manifests/shop/compose.override.yaml":   "services:\n  web: {image: busybox:override}\n",
		"manifests/shop/.env":                    "TAG=1.36\n",
		"manifests/pod.yaml":                     podYAML("native", "1"),
	})
	repo.Push()
	for _, tt := range []struct{ path, want string }{
		{"manifests/shop/docker-compose.prod.yml", "shop-web@manifests/shop/docker-compose.prod.yml=busybox:1.36"},
		{"manifests/pod.yaml", "native@manifests/pod.yaml=example.org/app:1"},
	} {
		cfg := gitConfig(repo.FileURL())
		cfg.Path = tt.path
		snap, err := gitsource.New(cfg, t.TempDir(), slog.New(slog.DiscardHandler)).
			WithCompose(composetest.Renderer(t, project.Host{})).Read(context.Background())
		var got []string
		for _, s := range snap.Manifests {
			got = append(got, s.Manifest.ID+"@"+s.Origin.File+"="+s.Manifest.Containers[0].Image)
		}
		if err != nil || !reflect.DeepEqual(got, []string{tt.want}) {
			t.Errorf("path %s: pods %q, %v; want %s", tt.path, got, err, tt.want)
		}
	}
}

// A project's file that is a symlink in git is refused, never followed.
func TestComposeSymlinkInACommitIsRefused(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	repo.Write("manifests/shop/compose.yaml", "services:\n  web:\n    image: busybox\n    env_file: [secret.env]\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(repo.Work, "manifests/shop/secret.env")); err != nil {
		t.Fatal(err)
	}
	repo.Commit("link")
	repo.Push()
	snap, err := gitsource.New(gitConfig(repo.FileURL()), t.TempDir(), slog.New(slog.DiscardHandler)).
		WithCompose(composetest.Renderer(t, project.Host{})).Read(context.Background())
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var errs []string
	for _, s := range snap.Manifests {
		for _, e := range s.Errors {
			errs = append(errs, e.Error())
		}
	}
	want := "fleet:manifests/shop/compose.yaml: services.web.env_file[0]: secret.env: secret.env is a symlink; files in git must be regular files"
	if len(errs) != 1 || errs[0] != want {
		t.Fatalf("errors %q, want %q", errs, want)
	}
	if strings.Contains(strings.Join(errs, ""), "root:") {
		t.Error("an error shows the link target's content")
	}
}

// A project file committed executable (100755) is mounted executable.
func TestComposeExecutableInACommit(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t)
	repo.Write("manifests/shop/compose.yaml", "services:\n  web:\n    image: busybox\n    volumes: ['./run.sh:/run.sh', './conf.txt:/conf.txt']\n")
	repo.Write("manifests/shop/run.sh", "#!/bin/sh\n")
	repo.Write("manifests/shop/conf.txt", "x\n")
	if err := os.Chmod(filepath.Join(repo.Work, "manifests", "shop", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo.Commit("executable")
	repo.Push()
	snap, err := gitsource.New(gitConfig(repo.FileURL()), t.TempDir(), slog.New(slog.DiscardHandler)).
		WithCompose(composetest.Renderer(t, project.Host{})).Read(context.Background())
	if err != nil || len(snap.Manifests) != 1 || len(snap.Manifests[0].Errors) > 0 {
		t.Fatalf("read: %v %+v", err, snap.Manifests)
	}
	modes := map[string]uint32{}
	for _, v := range snap.Manifests[0].Manifest.Volumes {
		modes[v.Files.Source] = v.Files.Items[0].ItemMode()
	}
	if want := map[string]uint32{"run.sh": manifest.FileModeExe, "conf.txt": manifest.FileMode}; !reflect.DeepEqual(modes, want) {
		t.Errorf("modes %v, want %v", modes, want)
	}
}
