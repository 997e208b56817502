package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
)

// cliSyncer is the reconciler as the API sees it: nothing to report.
type cliSyncer struct{}

func (cliSyncer) Report() hsync.Report       { return hsync.Report{} }
func (cliSyncer) Healthy(time.Duration) bool { return true }

// cliHolder holds pods as a Syncer does, from a set, and records the
// calls (and POST /sync's triggers).
type cliHolder struct {
	mu    gosync.Mutex
	held  map[string]hsync.Hold
	calls []string
}

var holdSince = time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)

func (h *cliHolder) Hold(_ context.Context, id, by, reason string) (hsync.Hold, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf("hold %s by=%s reason=%s", id, by, reason))
	if id != strings.ToLower(id) {
		return hsync.Hold{}, fmt.Errorf("hold %q: not a pod ID (an RFC 1123 DNS subdomain)", id)
	}
	hd := hsync.Hold{By: by, Reason: reason, Since: holdSince}
	if hd.By == "" {
		hd.By = "unknown"
	}
	h.held[id] = hd
	return hd, nil
}

func (h *cliHolder) Release(id string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, "release "+id)
	if _, ok := h.held[id]; !ok {
		return fmt.Errorf("release %q: %w", id, hsync.ErrNotHeld)
	}
	delete(h.held, id)
	return nil
}

func (h *cliHolder) sync(force bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, fmt.Sprintf("sync force=%v", force))
}

func (h *cliHolder) take() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.calls
	h.calls = nil
	return c
}

// TestHoldReleaseSyncCommands: hold, release and sync talk to the local
// API (listen) with the token of tokenFile; exit 0 with what the server
// said, 1 with its message.
func TestHoldReleaseSyncCommands(t *testing.T) {
	const tok = "cli-t0ken"
	dir := t.TempDir()
	tokenFile := writeFile(t, dir, "token", tok+"\n")
	wrongToken := writeFile(t, dir, "wrong-token", "guess\n")
	h := &cliHolder{held: map[string]hsync.Hold{}}
	srv := api.New(api.Options{Hostname: "web-1", Token: tok, Loopback: true}, cliSyncer{}, nil, eventlog.NewLog(1), slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv.HandleHolds(h)
	srv.HandleSync(h.sync)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	addr := ts.Listener.Addr().String()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedAddr := closed.Listener.Addr().String()
	closed.Close()

	config := func(name, listen, tokenFile string) string {
		cfg := "hostname: web-1\nstateDir: " + dir + "/state\n"
		cfg += fmt.Sprintf("listen: %q\n", listen)
		if tokenFile != "" {
			cfg += "tokenFile: " + tokenFile + "\n"
		}
		return writeFile(t, dir, name, cfg)
	}
	good := config("good.yaml", addr, tokenFile)
	wrong := config("wrong.yaml", addr, wrongToken)
	noToken := config("no-token.yaml", addr, "")
	noListen := config("no-listen.yaml", "", tokenFile)
	down := config("down.yaml", closedAddr, tokenFile)

	t.Setenv("SUDO_USER", "")
	t.Setenv("USER", "bob")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // exactly
		stderr string // contained
		calls  []string
	}{
		{name: "hold", args: []string{"hold", "web", "--by", "alice", "--reason", "db migration", "--config", good}, code: 0,
			stdout: "pod web held by alice since 2026-12-05T14:00:00Z: db migration\n", calls: []string{"hold web by=alice reason=db migration"}},
		{name: "hold again, by defaults to $USER", args: []string{"hold", "web", "--config", good}, code: 0,
			stdout: "pod web held by bob since 2026-12-05T14:00:00Z\n", calls: []string{"hold web by=bob reason="}},
		{name: "hold, --by empty", args: []string{"hold", "cache", "--by", "", "--config", good}, code: 0,
			stdout: "pod cache held by unknown since 2026-12-05T14:00:00Z\n", calls: []string{"hold cache by= reason="}},
		{name: "hold a bad ID", args: []string{"hold", "Web", "--config", good}, code: 1,
			stderr: `hostlet: hold "Web": not a pod ID`, calls: []string{"hold Web by=bob reason="}},
		{name: "release", args: []string{"release", "web", "--config", good}, code: 0, stdout: "pod web released\n", calls: []string{"release web"}},
		{name: "release a pod not held", args: []string{"release", "web", "--config", good}, code: 1,
			stderr: "hostlet: pod web is not held\n", calls: []string{"release web"}},
		{name: "sync", args: []string{"sync", "--config", good}, code: 0, stdout: "sync requested\n", calls: []string{"sync force=false"}},
		{name: "sync --force", args: []string{"sync", "--force", "--config", good}, code: 0,
			stdout: "sync requested, forced: changes apply now, maintenance windows or not (holds still hold)\n", calls: []string{"sync force=true"}},
		{name: "wrong token", args: []string{"hold", "web", "--config", wrong}, code: 1, stderr: "hostlet: missing or wrong bearer token\n"},
		{name: "hold without tokenFile", args: []string{"hold", "web", "--config", noToken}, code: 1,
			stderr: "hostlet: hostlet hold needs tokenFile in the config: the API only accepts holds with the token\n"},
		{name: "release without tokenFile", args: []string{"release", "web", "--config", noToken}, code: 1, stderr: "hostlet release needs tokenFile"},
		{name: "sync without tokenFile", args: []string{"sync", "--config", noToken}, code: 1, stderr: "hostlet sync needs tokenFile"},
		{name: "without listen", args: []string{"hold", "web", "--config", noListen}, code: 1, stderr: "hostlet hold needs listen in the config"},
		{name: "API down", args: []string{"release", "web", "--config", down}, code: 1, stderr: "the local API is unreachable"},
		{name: "hold without a pod", args: []string{"hold", "--config", good}, code: 1, stderr: "accepts 1 arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.take()
			r := runCLI(t, tt.args...)
			if r.code != tt.code || (tt.code == 0 && r.stdout != tt.stdout) || !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("hostlet %s: exit %d\nstdout %q\nstderr %q\nwant exit %d, stdout %q, stderr with %q",
					strings.Join(tt.args, " "), r.code, r.stdout, r.stderr, tt.code, tt.stdout, tt.stderr)
			}
			if got := h.take(); fmt.Sprint(got) != fmt.Sprint(tt.calls) {
				t.Errorf("API calls %q, want %q", got, tt.calls)
			}
		})
	}
}

// TestCurrentUser: --by defaults to the user behind sudo, else $USER.
func TestCurrentUser(t *testing.T) {
	t.Setenv("SUDO_USER", "alice")
	t.Setenv("USER", "root")
	if got := currentUser(); got != "alice" {
		t.Errorf("with SUDO_USER: %q, want alice", got)
	}
	t.Setenv("SUDO_USER", "")
	if got := currentUser(); got != "root" {
		t.Errorf("with USER: %q, want root", got)
	}
	t.Setenv("USER", "")
	if got := currentUser(); got == "" {
		t.Log("no OS user name known here")
	}
}
