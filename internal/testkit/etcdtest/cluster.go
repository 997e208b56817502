package etcdtest

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/testkit"
)

// Cluster is an embedded etcd cluster of several members on loopback,
// each with its own data folder and ports.
type Cluster struct {
	t       testing.TB
	members []*member
	// Endpoints are the members' client URLs, in order.
	Endpoints []string
}

type member struct {
	name         string
	dir          string
	client, peer url.URL
	etcd         *embed.Etcd
}

// StartCluster starts a fresh cluster of n members (3 for a quorum that
// survives one member's loss); it is stopped when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t}
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("m%d", i), dir: t.TempDir(),
			client: url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))},
			peer:   url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))}}
		c.members = append(c.members, m)
		c.Endpoints = append(c.Endpoints, m.client.String())
		initial = append(initial, m.name+"="+m.peer.String())
	}
	t.Cleanup(c.stopAll)
	// Members wait for each other: start them all, then wait.
	for _, m := range c.members {
		cfg := embed.NewConfig()
		cfg.Name, cfg.Dir = m.name, m.dir
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.client}, []url.URL{m.client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.peer}, []url.URL{m.peer}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "etcdtest-cluster"
		cfg.LogLevel = "fatal"
		e, err := embed.StartEtcd(cfg)
		if err != nil {
			t.Fatalf("etcdtest: start member %s: %v", m.name, err)
		}
		m.etcd = e
	}
	for _, m := range c.members {
		select {
		case <-m.etcd.Server.ReadyNotify():
		case <-time.After(60 * time.Second):
			t.Fatalf("etcdtest: member %s not ready within 60s", m.name)
		}
	}
	return c
}

// Stop stops member i (its data stays); the others go on.
func (c *Cluster) Stop(i int) {
	m := c.members[i]
	if m.etcd != nil {
		m.etcd.Close()
		<-m.etcd.Server.StopNotify()
		m.etcd = nil
	}
}

func (c *Cluster) stopAll() {
	for i := range c.members {
		c.Stop(i)
	}
}

// Leader is the index of the member that leads now (-1 when none knows).
func (c *Cluster) Leader() int {
	for i, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return i
		}
	}
	return -1
}

// Client returns a client of every member, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcdtest: client for %v: %v", c.Endpoints, err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}
