package sources

// Attacks on Compose projects read by sources (outside review). A failing
// test is a finding.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/composetest"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// Promise 1, end to end through the real helper: an HTTP body (or a file
// in a repository) whose second YAML document extends a service of a host
// file gets that file read by hostlet-compose and its environment copied
// into the attacker's pod.
func TestAttackBodyExtendsHostFile(t *testing.T) {
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

// Promise 1 holds for the bundle itself: links out of the source folder
// are bundled as errors and never opened (passes; kept as a guard).
func TestAttackProjectLinksOutOfTheSource(t *testing.T) {
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
