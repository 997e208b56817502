package compose_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

// FuzzCompose feeds arbitrary Compose files (with an arbitrary .env) to Load:
// it must not panic, every error must be a *manifest.Error naming the
// source, and every pod must carry the project's labels.
func FuzzCompose(f *testing.F) {
	seeds := []struct{ file, env string }{
		{"services:\n  web:\n    image: busybox\n", ""},
		{"services:\n  web:\n    image: busybox:${TAG}\n    ports: ['8080:80', '9000-9001:9000-9001/udp']\n", "TAG=1\n"},
		{"name: x\nservices:\n  a: {image: a, deploy: {replicas: 100}}\n  b: {extends: a, scale: 2}\n", ""},
		{"services:\n  web:\n    image: busybox\n    env_file: [.env]\n    environment: [A, B=2]\n", "A=1\n"},
		{"services:\n  web:\n    image: busybox\n    volumes: ['/srv:/srv:ro', './x:/x', 'data:/data']\n", ""},
		{"include: [a.yaml]\nservices: {}\n", ""},
		{"services:\n  web: {image: b, stop_grace_period: 99999999999h, mem_limit: 1e30}\n", ""},
		{"x-a: &a {image: busybox}\nservices:\n  web: *a\n", ""},
		{"services:\n  web:\n    image: busybox\n    tmpfs: ['/run:size=16M,mode=1750,exec', /tmp]\n    volumes: [{type: tmpfs, target: /s, tmpfs: {size: 1, mode: 0o700}}]\n", ""},
		{"services:\n  web: {image: b, links: ['db:database', db]}\n  db: {image: b, deploy: {mode: global}}\n", ""},
		{"services:\n  web: {imagee: b, image: b, privileged: true}\n", ""},
	}
	for _, s := range seeds {
		f.Add(s.file, s.env)
	}
	// The hostile Compose files written in the tests of what a project may
	// not do (and in the sources' and the renderer's).
	for _, s := range testkit.Literals(f, func(s string) bool { return strings.Contains(s, "services:") },
		"extends_test.go", "include_rules_test.go", "files_mounts_test.go", "values_test.go", "work_bounds_test.go", "load_test.go", "hostaccess_test.go", "homepath_test.go",
		filepath.Join("..", "..", "sources", "compose_test.go"), filepath.Join("..", "project", "render_reruns_test.go")) {
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, file, env string) {
		files := mapFiles{"compose.yaml": file}
		if env != "" {
			files[".env"] = env
		}
		pods, err := compose.Load(context.Background(), files, compose.Options{Source: "fuzz", Dir: "p"})
		if err != nil {
			var merr *multierror.Error
			if !errors.As(err, &merr) {
				t.Fatalf("error %T is not a *multierror.Error: %v", err, err)
			}
			for _, e := range merr.Errors {
				var me *manifest.Error
				if !errors.As(e, &me) || me.Origin.Source != "fuzz" {
					t.Fatalf("error not named: %v", e)
				}
			}
		}
		for _, p := range pods {
			if p.Manifest.Labels[compose.LabelProject] == "" || p.Manifest.Labels[compose.LabelService] == "" {
				t.Fatalf("pod %q without project labels", p.Manifest.ID)
			}
			for _, e := range p.Errors {
				if e.Origin.Source != "fuzz" {
					t.Fatalf("error not named: %v", e)
				}
			}
		}
	})
}
