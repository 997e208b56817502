//go:build faults

package faults

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
)

// Source names, in config order (the order conflicts would be decided in;
// the suite's pod IDs never conflict).
const (
	srcGit  = "git"
	srcHTTP = "web"
	srcEtcd = "kv"
	srcFile = "local"
	srcPush = "push"
)

var sourceOrder = []string{srcGit, srcHTTP, srcEtcd, srcFile, srcPush}

// feed makes one source hold a set of pods.
type feed interface {
	publish(t *testing.T, pods []pod) error
}

// gitFeed commits the pods as pods/<id>.json and pushes to the bare
// repository the gittest server serves. Every commit's set is kept, so a
// force-push back to an older commit knows what that commit holds.
type gitFeed struct {
	m       *model
	repo    *gittest.Repo
	commits []gitCommit
}

type gitCommit struct {
	sha  string
	pods map[string]pod
}

func (g *gitFeed) publish(t *testing.T, pods []pod) error {
	t.Helper()
	g.write(t, pods)
	sha := g.repo.Commit(fmt.Sprintf("faults: %d pods", len(pods)))
	g.repo.Push()
	g.commits = append(g.commits, gitCommit{sha: sha, pods: byID(pods)})
	return nil
}

// write makes the working clone's pods/ hold exactly pods.
func (g *gitFeed) write(t *testing.T, pods []pod) {
	t.Helper()
	dir := filepath.Join(g.repo.Work, "pods")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatalf("clear %s: %v", dir, err)
	}
	for _, p := range pods {
		g.repo.Write("pods/"+p.ID+".json", string(g.m.file(p)))
	}
	// An empty commit is still a new revision (never the case here: every
	// source keeps a pod).
	g.repo.Write("revision.txt", time.Now().Format(time.RFC3339Nano))
}

// forcePush rewrites history: the branch is reset to an older commit and a
// new commit holding pods is force-pushed on top of it, so the branch's
// new head does not descend from what hostlet fetched last.
func (g *gitFeed) forcePush(t *testing.T, older string, pods []pod) {
	t.Helper()
	g.repo.Git("reset", "--quiet", "--hard", older)
	g.write(t, pods)
	sha := g.repo.Commit("faults: rewritten history")
	g.repo.Git("push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+g.repo.Branch)
	g.commits = append(g.commits, gitCommit{sha: sha, pods: byID(pods)})
}

func byID(pods []pod) map[string]pod {
	out := map[string]pod{}
	for _, p := range pods {
		out[p.ID] = p
	}
	return out
}

// httpSource is the HTTP source's server on 127.0.0.1, on one port for
// the whole run: up (the list, with an ETag), down (connections refused),
// or broken in one of three ways.
type httpSource struct {
	mu      sync.Mutex
	addr    string
	srv     *http.Server
	body    []byte
	mode    string
	garbage []byte
}

// HTTP source modes.
const (
	httpUp      = "up"
	httpError   = "500"
	httpGarbage = "garbage"
	httpCut     = "cut" // the connection closes halfway through the body
)

func (h *httpSource) url() string { return "http://" + h.addr + "/pods.json" }

// start listens again on the address of the last start (a new port the
// first time).
func (h *httpSource) start() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.srv != nil {
		return nil
	}
	ln, err := testkit.Listen(h.addr)
	if err != nil {
		return fmt.Errorf("http source: listen on %q: %w", h.addr, err)
	}
	h.addr = ln.Addr().String()
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 5 * time.Second}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(h.srv)
	return nil
}

// stop closes the listener and every connection.
func (h *httpSource) stop() {
	h.mu.Lock()
	srv := h.srv
	h.srv = nil
	h.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (h *httpSource) setMode(mode string, garbage []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mode, h.garbage = mode, garbage
}

func (h *httpSource) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	body, mode, garbage := h.body, h.mode, h.garbage
	h.mu.Unlock()
	switch mode {
	case httpError:
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case httpGarbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(garbage)
		return
	case httpCut:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		_, _ = w.Write(body[:len(body)/2])
		// Returning with less written than declared makes the server
		// close the connection: the client reads an unexpected EOF.
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// httpFeed sets what the HTTP source serves.
type httpFeed struct {
	m   *model
	srv *httpSource
}

func (f *httpFeed) publish(t *testing.T, pods []pod) error {
	f.srv.mu.Lock()
	f.srv.body = f.m.list(pods)
	f.srv.mu.Unlock()
	return nil
}

// etcdFeed puts the list under one key (etcd must be up). Each put uses
// a new client: one that lived through an outage may still be backing off
// its reconnects, and that delay would count as hostlet's.
type etcdFeed struct {
	m        *model
	endpoint string
	key      string
}

func (f *etcdFeed) publish(t *testing.T, pods []pod) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{f.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return fmt.Errorf("etcd client for %s: %w", f.endpoint, err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, f.key, string(f.m.list(pods))); err != nil {
		return fmt.Errorf("etcd put %s: %w", f.key, err)
	}
	return nil
}

// fileFeed keeps one file per pod in a folder, each written whole (temp
// file, then rename).
type fileFeed struct {
	m   *model
	dir string
}

func (f *fileFeed) publish(t *testing.T, pods []pod) error {
	want := map[string]bool{}
	for _, p := range pods {
		name := p.ID + ".json"
		want[name] = true
		tmp := filepath.Join(filepath.Dir(f.dir), ".tmp-"+name)
		if err := os.WriteFile(tmp, f.m.file(p), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
			return fmt.Errorf("rename %s: %w", tmp, err)
		}
	}
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.dir, err)
	}
	for _, e := range entries {
		if !want[e.Name()] {
			if err := os.Remove(filepath.Join(f.dir, e.Name())); err != nil {
				return fmt.Errorf("remove %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// pushFeed POSTs the list to /manifests. A push counts only when answered
// 2xx; a *pushRefusedError says it was not.
type pushFeed struct {
	m     *model
	api   string
	token string
	// last is the status of the last push (0: no answer).
	last int
}

type pushRefusedError struct {
	code int
	body string
}

func (e *pushRefusedError) Error() string {
	return fmt.Sprintf("push answered %d: %s", e.code, strings.TrimSpace(e.body))
}

func (f *pushFeed) publish(t *testing.T, pods []pod) error {
	f.last = 0
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.api+"/manifests", bytes.NewReader(f.m.list(pods)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+f.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	f.last = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &pushRefusedError{code: resp.StatusCode, body: string(b)}
	}
	return nil
}
