package project_test

// When Render runs the helper again (only when a project's files or the
// host's compose settings change: docs/compose.md), and that it returns at
// its deadline whatever the helper does.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest/project"
)

const okAnswer = `{"manifests":[]}`

func countCalls(t *testing.T, calls string) int {
	t.Helper()
	data, err := os.ReadFile(calls)
	if err != nil {
		return 0
	}
	return strings.Count(string(data), "x")
}

// TestRenderCacheKeepsMoreThan256Projects: the helper runs again only when
// a project's files or the host's compose settings change (promise 6,
// docs). A cache of 256 renders evicting the oldest made a source (or a
// set of sources) with more than 256 projects re-run the helper for every
// project on every read, although nothing changed.
func TestRenderCacheKeepsMoreThan256Projects(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	helper := script(t, "echo x >> "+calls+"\ncat > /dev/null\necho '"+okAnswer+"'\n")
	r := project.NewRenderer(helper, project.Host{})
	const projects = 257
	for pass := range 2 {
		for i := range projects {
			b := project.Bundle{Options: project.Options{Source: "apps", Dir: fmt.Sprintf("p%d", i)}}
			_ = b.Add("compose.yaml", []byte("services: {web: {image: busybox}}\n"), nil)
			if _, err := r.Render(context.Background(), b); err != nil {
				t.Fatalf("pass %d project %d: %v", pass, i, err)
			}
		}
	}
	if n := countCalls(t, calls); n != projects {
		t.Errorf("the helper ran %d times for %d unchanged projects read twice", n, projects)
	}
}

// TestFailedRenderIsRemembered (promise 6): a render that fails (the
// helper timed out on a hostile file) is remembered: the unchanged project
// does not run the helper again, up to its timeout, on every read.
func TestFailedRenderIsRemembered(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	helper := script(t, "echo x >> "+calls+"\ncat > /dev/null\nexec sleep 5\necho '"+okAnswer+"'\n")
	r := project.NewRenderer(helper, project.Host{})
	r.Timeout = 300 * time.Millisecond
	for range 2 {
		_, err := r.Render(context.Background(), bundle())
		if err == nil || !strings.Contains(err.Error(), "render the Compose project: hostlet-compose: context deadline exceeded") {
			t.Fatalf("render: %v, want the helper's timeout", err)
		}
	}
	if n := countCalls(t, calls); n != 1 {
		t.Errorf("the helper ran %d times for one unchanged project that timed out", n)
	}
}

// TestRenderReturnsAtItsDeadline (promise 6): Render returns at its
// deadline. Without cmd.WaitDelay, when the helper is killed but a child of
// it still holds stdout, Wait (and so Render, and the source's read)
// blocks until that child exits.
func TestRenderReturnsAtItsDeadline(t *testing.T) {
	helper := script(t, "cat > /dev/null\nsleep 4 &\nsleep 4\n")
	r := project.NewRenderer(helper, project.Host{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.Render(ctx, bundle())
		done <- err
	}()
	// The helper's children hold its output for 4 s; Render must not wait
	// for them.
	select {
	case err := <-done:
		if err == nil {
			t.Error("render of a helper that never answers: no error")
		}
	case <-time.After(3 * time.Second):
		t.Error("Render still waits for the helper's children, past its deadline")
		<-done
	}
}
