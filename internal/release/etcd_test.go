package release

import (
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
)

// TestPublishWaveTransactions: a wave over etcd's 128 operations per
// transaction is written in several.
func TestPublishWaveTransactions(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	var (
		puts []clientv3.Op
		cmps []clientv3.Cmp
	)
	for i := range 300 {
		key := fmt.Sprintf("/p/desired/h%03d/fleet", i)
		puts = append(puts, clientv3.OpPut(key, "x"))
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", 0))
	}
	p := &Publisher{Etcd: cli}
	n, err := p.writeWave(t.Context(), cmps, puts, clientv3.OpPut("/p/releases/x", "{}"))
	if err != nil || n != 3 {
		t.Fatalf("writeWave of 300 puts: %d transactions, %v; want 3, nil", n, err)
	}
	resp, err := cli.Get(t.Context(), "/p/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 301 {
		t.Fatalf("after writeWave: %d keys, %v; want 301", resp.Count, err)
	}
	// The same keys again, as if unwritten: refused.
	if _, err := p.writeWave(t.Context(), cmps[:1], puts[:1], clientv3.OpPut("/p/releases/x", "{}")); err == nil || !strings.Contains(err.Error(), "changed since it was read") {
		t.Errorf("writeWave over a key written meanwhile: %v", err)
	}
}

// TestPublishLargeRecord: a release record that does not fit beside a
// full transaction of puts (it grows with the fleet) goes in a
// transaction of its own, never making one etcd refuses.
func TestPublishLargeRecord(t *testing.T) {
	srv := etcdtest.Start(t)
	cli := srv.Client(t)
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	for i := range 120 {
		k := fmt.Sprintf("/hostlet/desired/host-%03d/fleet", i)
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", 0))
		puts = append(puts, clientv3.OpPut(k, strings.Repeat("v", 8<<10)))
	}
	record := clientv3.OpPut("/hostlet/releases/r", strings.Repeat("h", 600<<10))
	n, err := (&Publisher{Etcd: cli}).writeWave(t.Context(), cmps, puts, record)
	if err != nil || n != 2 {
		t.Fatalf("writeWave: %d transactions, %v; want 2 (the record on its own)", n, err)
	}
}
