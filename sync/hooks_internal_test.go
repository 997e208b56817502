package sync

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// codeExec answers every command with code.
type codeExec struct {
	code int
	ran  []string
}

func (e *codeExec) Exec(_ context.Context, _ string, cmd []string) (int, error) {
	e.ran = append(e.ran, strings.Join(cmd, " "))
	return e.code, nil
}

func hookContainer(t *testing.T, h manifest.Hook, grace int64) *hruntime.Container {
	t.Helper()
	b, err := json.Marshal(podspec.PreStop{Hook: h, GraceSeconds: grace})
	if err != nil {
		t.Fatal(err)
	}
	return &hruntime.Container{ID: "c1", State: hruntime.StateRunning, Labels: map[string]string{
		hruntime.LabelPod: "web", hruntime.LabelContainer: "app", podspec.LabelPreStop: string(b)}}
}

// A preStop hook runs before the stop within the grace period, which it
// uses up: the stop gets what is left, at least 2 s; a failing hook does
// not stop the stop; a container without a hook, or stopped, runs none.
func TestPreStopRunsWithinTheGracePeriod(t *testing.T) {
	srv, asked := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	host, port := splitHostPort(t, srv)
	tests := []struct {
		name      string
		c         *hruntime.Container
		grace     time.Duration
		exec      int
		ran       int
		http      int64
		leftUnder time.Duration
	}{
		{name: "exec", c: hookContainer(t, manifest.Hook{Exec: &manifest.Exec{Command: []string{"drain"}}}, 30), grace: 10 * time.Second, ran: 1, leftUnder: 10*time.Second + 1},
		{name: "exec failing", c: hookContainer(t, manifest.Hook{Exec: &manifest.Exec{Command: []string{"drain"}}}, 30), grace: 10 * time.Second, exec: 1, ran: 1, leftUnder: 10*time.Second + 1},
		{name: "grace of the label", c: hookContainer(t, manifest.Hook{Exec: &manifest.Exec{Command: []string{"drain"}}}, 30), grace: DefaultStopTimeout, ran: 1, leftUnder: 30*time.Second + 1},
		{name: "httpGet", c: hookContainer(t, manifest.Hook{HTTPGet: &manifest.HTTPGet{Path: "/drain", Port: port}}, 30), grace: 10 * time.Second, http: 1, leftUnder: 10*time.Second + 1},
		{name: "sleep past the grace", c: hookContainer(t, manifest.Hook{SleepSeconds: 60}, 1), grace: time.Second, leftUnder: minStopGrace + 1},
		{name: "no hook", c: &hruntime.Container{ID: "c1", State: hruntime.StateRunning}, grace: 10 * time.Second, leftUnder: 10*time.Second + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.IP = host
			ex := &codeExec{code: tt.exec}
			before := asked.Load()
			left := preStop(context.Background(), ex, tt.c, tt.c.IP, tt.grace, slog.New(slog.DiscardHandler))
			if len(ex.ran) != tt.ran || asked.Load()-before != tt.http {
				t.Errorf("ran %q and %d requests, want %d commands and %d requests", ex.ran, asked.Load()-before, tt.ran, tt.http)
			}
			if left >= tt.leftUnder || left < minStopGrace && tt.grace >= minStopGrace {
				t.Errorf("left %v for the stop, want under %v and at least %v", left, tt.leftUnder, minStopGrace)
			}
		})
	}
}
