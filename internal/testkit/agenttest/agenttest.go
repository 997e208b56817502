// Package agenttest runs hostlet (internal/agent.Run) inside a test's
// process, for end-to-end tests against the real Docker engine: start it
// on a config, wait for its API, read its status, stop it.
package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/agent"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
)

// Deadlines of Start and Stop: generous, as the engine may be busy with
// other packages' tests.
const (
	listenTimeout = 2 * time.Minute
	stopTimeout   = time.Minute
)

// Options are the agent.Options of tests: version "test", and infra
// containers running "/demo pause" (the test image holds the demo server,
// not hostlet).
func Options(listening func(addr string)) agent.Options {
	return agent.Options{Version: "test", InfraCommand: []string{"/demo", "pause"}, Listening: listening}
}

// Agent is one agent.Run in the test's process.
type Agent struct {
	// Addr is the API's address, host:port.
	Addr string

	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	ended  bool
}

// Start runs agent.Run on cfg, logging to log (the test's output when
// nil), until Stop or the end of the test, and returns once its API
// listens.
func Start(t testing.TB, cfg *config.Config, log *slog.Logger) *Agent {
	t.Helper()
	if log == nil {
		log = dockertest.Logger(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	a := &Agent{t: t, cancel: cancel, done: make(chan error, 1)}
	go func() {
		a.done <- agent.Run(ctx, cfg, Options(func(s string) { addr <- s }), log)
	}()
	t.Cleanup(a.Stop)
	select {
	case a.Addr = <-addr:
	case err := <-a.done:
		a.ended = true
		cancel()
		t.Fatalf("agent.Run returned before listening: %v", err)
	case <-time.After(listenTimeout):
		t.Fatalf("agent.Run not listening within %s", listenTimeout)
	}
	return a
}

// Stop cancels the agent and waits for agent.Run to return, failing the
// test if it returns an error; containers keep running. Later calls do
// nothing.
func (a *Agent) Stop() {
	a.t.Helper()
	if a.ended {
		return
	}
	a.ended = true
	a.cancel()
	select {
	case err := <-a.done:
		if err != nil {
			a.t.Errorf("agent.Run returned %v", err)
		}
	case <-time.After(stopTimeout):
		a.t.Errorf("agent.Run did not return within %s of cancel", stopTimeout)
	}
}

// URL is the API's URL for path, e.g. "/status".
func (a *Agent) URL(path string) string { return "http://" + a.Addr + path }

// Status reads GET /status.
func (a *Agent) Status() (api.Document, error) {
	var doc api.Document
	code, body, err := testkit.HTTP(http.MethodGet, a.URL("/status"), "")
	if err != nil {
		return doc, err
	}
	if code != http.StatusOK {
		return doc, fmt.Errorf("GET /status: %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		return doc, fmt.Errorf("decode /status: %w", err)
	}
	return doc, nil
}

// WaitStatus waits up to timeout until cond holds for /status and returns
// that document; t fails with cond's last reason otherwise.
func (a *Agent) WaitStatus(t testing.TB, timeout time.Duration, cond func(api.Document) (bool, string)) api.Document {
	t.Helper()
	var doc api.Document
	testkit.WaitFor(t, timeout, func() (bool, string) {
		d, err := a.Status()
		if err != nil {
			return false, err.Error()
		}
		doc = d
		return cond(d)
	})
	return doc
}
