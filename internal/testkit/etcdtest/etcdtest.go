// Package etcdtest runs an embedded etcd server for tests
// (go.etcd.io/etcd/server/v3/embed): on 127.0.0.1, on ports chosen at
// start and kept across Stop and Restart, with its data in a test's temp
// folder. It is imported by tests only, so the server never links into
// hostlet.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/testkit"
)

// Server is one embedded etcd member.
type Server struct {
	t        testing.TB
	dir      string
	client   url.URL
	peer     url.URL
	mu       sync.Mutex
	etcd     *embed.Etcd
	Endpoint string
}

// Start starts a fresh single-member etcd with its data in t.TempDir(). It
// is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	// A port found free may be taken by another process (tests of other
	// packages run in parallel) before etcd binds it: try fresh ports then.
	for try := 1; ; try++ {
		s.client = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))}
		s.peer = url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))}
		s.Endpoint = s.client.String()
		err := s.tryStart()
		if err == nil {
			return s
		}
		if !errors.Is(err, syscall.EADDRINUSE) || try == 5 {
			t.Fatalf("etcdtest: %v", err)
		}
	}
}

func (s *Server) start() {
	s.t.Helper()
	if err := s.tryStart(); err != nil {
		s.t.Fatalf("etcdtest: %v", err)
	}
}

func (s *Server) tryStart() error {
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
	cfg.Dir = s.dir
	cfg.ListenClientUrls = []url.URL{s.client}
	cfg.AdvertiseClientUrls = []url.URL{s.client}
	cfg.ListenPeerUrls = []url.URL{s.peer}
	cfg.AdvertisePeerUrls = []url.URL{s.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "fatal"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd in %s: %w", s.dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("etcd in %s not ready within 30s", s.dir)
	}
	s.mu.Lock()
	s.etcd = e
	s.mu.Unlock()
	return nil
}

// Stop closes the server (its data stays); calling it again does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	e := s.etcd
	s.etcd = nil
	s.mu.Unlock()
	if e != nil {
		e.Close()
		<-e.Server.StopNotify()
	}
}

// Restart starts the server again on the same data folder and ports.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.start()
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcdtest: client for %s: %v", s.Endpoint, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// Put writes key=value with cli and returns the store revision of the
// write, failing the test on error.
func Put(t testing.TB, cli *clientv3.Client, key, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cli.Put(ctx, key, value)
	if err != nil {
		t.Fatalf("etcdtest: put %s: %v", key, err)
	}
	return resp.Header.Revision
}
