package project_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// script writes an executable shell script standing in for the helper.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "helper")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func bundle() project.Bundle {
	b := project.Bundle{Options: project.Options{Source: "apps", Dir: "shop"}}
	_ = b.Add("compose.yaml", []byte("services: {web: {image: busybox}}\n"), nil)
	return b
}

// A bundle rendered once is not rendered again; a changed file or a
// changed host setting is.
func TestRenderRunsTheHelperOncePerBundle(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	helper := script(t, `echo x >> `+calls+`
cat > /dev/null
echo '{"manifests":[{"Origin":{"source":"apps","file":"shop/compose.yaml","index":0},"Manifest":{"version":"v1beta1","id":"shop-web","containers":[{"name":"web","image":"busybox"}]}}]}'
`)
	r := project.NewRenderer(helper, project.Host{})
	ctx := context.Background()
	for range 3 {
		ms, err := r.Render(ctx, bundle())
		if err != nil || len(ms) != 1 || ms[0].Manifest.ID != "shop-web" {
			t.Fatalf("render: %+v, %v", ms, err)
		}
		ms[0].Manifest.ID = "changed by the caller"
	}
	changed := bundle()
	_ = changed.Add(".env", []byte("TAG=2\n"), nil)
	if _, err := r.Render(ctx, changed); err != nil {
		t.Fatal(err)
	}
	r.Host = project.Host{Env: map[string]string{"TAG": "3"}}
	if _, err := r.Render(ctx, changed); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "x"); n != 3 {
		t.Errorf("the helper ran %d times, want 3 (once per distinct bundle)", n)
	}
}

func TestRenderFailures(t *testing.T) {
	tests := []struct {
		name   string
		helper func(t *testing.T) string
		want   string
	}{
		{"no helper", func(t *testing.T) string { return filepath.Join(t.TempDir(), "missing") }, "apps:shop: render the Compose project: hostlet-compose: fork/exec"},
		{"fails", func(t *testing.T) string { return script(t, "cat >/dev/null; echo broken >&2; exit 1\n") }, "apps:shop: render the Compose project: hostlet-compose: exit status 1: broken"},
		{"answers junk", func(t *testing.T) string { return script(t, "cat >/dev/null; echo '{'\n") }, "apps:shop: render the Compose project: hostlet-compose: its answer does not decode"},
		{"answers too much", func(t *testing.T) string { return script(t, "cat >/dev/null; head -c 70000000 /dev/zero\n") }, "apps:shop: render the Compose project: hostlet-compose: an answer over 67108864 bytes"},
		{"sees no environment of ours", func(t *testing.T) string {
			return script(t, `cat >/dev/null; if [ -n "$SECRET_OF_HOSTLET" ]; then echo leaked >&2; exit 1; fi; echo '{"manifests":[],"errors":[{"origin":{"source":"apps","file":"shop/compose.yaml","index":0},"detail":"clean"}]}'`+"\n")
		}, "apps:shop/compose.yaml: clean"},
	}
	t.Setenv("SECRET_OF_HOSTLET", "hunter2")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := project.NewRenderer(tt.helper(t), project.Host{}).Render(context.Background(), bundle())
			if err == nil || !strings.HasPrefix(err.Error(), "1 error occurred:\n\t* "+tt.want) {
				t.Fatalf("error %v, want one starting %q", err, tt.want)
			}
			var me *manifest.Error
			if !errors.As(err, &me) {
				t.Errorf("error %T holds no *manifest.Error", err)
			}
		})
	}
}

func TestBundleBounds(t *testing.T) {
	var b project.Bundle
	if err := b.Add("big", make([]byte, project.MaxBytes), nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Add("one-more", []byte("x"), nil); !errors.Is(err, manifest.ErrTooLarge) {
		t.Errorf("over the bytes: %v, want ErrTooLarge", err)
	}
	var many project.Bundle
	for i := range project.MaxFiles {
		if err := many.Add(string(rune('a'+i%26))+strings.Repeat("x", i/26), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := many.Add("last", nil, nil); err == nil {
		t.Error("over the file count: no error")
	}
	if _, err := many.ReadFile("nope"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	_ = b.Add("link", nil, errors.New("link: resolves outside the source root; not read"))
	if _, err := b.ReadFile("link"); err == nil || !strings.Contains(err.Error(), "outside the source root") {
		t.Errorf("a refused file: %v", err)
	}
}

// A helper that is not there (yet: an upgrade in progress) is the host's
// failure, not the bundle's: it is not remembered.
func TestMissingHelperIsNotRemembered(t *testing.T) {
	p := filepath.Join(t.TempDir(), "helper")
	r := project.NewRenderer(p, project.Host{})
	if _, err := r.Render(context.Background(), bundle()); err == nil {
		t.Fatal("render without the helper: no error")
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat >/dev/null\necho '{\"manifests\":[]}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Render(context.Background(), bundle()); err != nil {
		t.Errorf("render once the helper is there: %v", err)
	}
}

// TestComposeName: a name holding "compose" and ending in .yaml or .yml,
// in any letter case, is a Compose name; a manifest's name is not.
func TestComposeName(t *testing.T) {
	for name, want := range map[string]bool{
		"docker-compose.prod.yml": true, "compose.dev.yaml": true, "Docker-Compose.YML": true,
		"docker-compose-caddy-proxy.yml": true, "docker-compose.postgres-tika.yml": true,
		"app.yaml": false, "compose.json": false, "compose": false, "pod.yml": false,
	} {
		if got := project.ComposeName(name); got != want {
			t.Errorf("ComposeName(%q) = %v, want %v", name, got, want)
		}
	}
}
