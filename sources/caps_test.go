package sources

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
)

// fullFile is a file of manifest.MaxFileManifests one-line manifests.
func fullFile(n int) string {
	var b strings.Builder
	for i := range manifest.MaxFileManifests {
		fmt.Fprintf(&b, "- {version: v1beta1, id: p%d-%d}\n", n, i)
	}
	return b.String()
}

// TestFileSourceOverManifestBoundRefusedWhole (issue 30, finding 5): a
// source holds at most manifest.MaxSourceManifests manifests. Reading a
// tree stops at the first file past the bound, and the source's read fails
// with an error naming the source and the bound.
func TestFileSourceOverManifestBoundRefusedWhole(t *testing.T) {
	dir := t.TempDir()
	files := manifest.MaxSourceManifests/manifest.MaxFileManifests + 2
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d.yaml", i)), []byte(fullFile(i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := ReadTree(context.Background(), "", []string{dir}, "local", nil)
	if !errors.Is(err, manifest.ErrTooManyManifests) {
		t.Fatalf("read error %v, want ErrTooManyManifests", err)
	}
	if !strings.Contains(err.Error(), "local:") || !strings.Contains(err.Error(), fmt.Sprint(manifest.MaxSourceManifests)) {
		t.Errorf("error %q does not name the source and the bound", err)
	}
	if max := manifest.MaxSourceManifests + manifest.MaxFileManifests; len(snap.Manifests) > max {
		t.Errorf("read %d manifests, want reading to stop at %d", len(snap.Manifests), max)
	}
}

// manyKeysKV answers a prefix read with keys files of full files.
type manyKeysKV struct {
	EtcdKV
	keys int
}

func (kv manyKeysKV) Get(context.Context, string, ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp := &clientv3.GetResponse{}
	resp.Header = &etcdserverpb.ResponseHeader{Revision: 1}
	for i := range kv.keys {
		resp.Kvs = append(resp.Kvs, &mvccpb.KeyValue{Key: fmt.Appendf(nil, "/pods/%02d", i), Value: []byte(fullFile(i)), ModRevision: 1})
	}
	return resp, nil
}

// TestEtcdSourceOverManifestBoundRefused: an etcd prefix whose keys hold
// more than manifest.MaxSourceManifests manifests in all fails the read.
func TestEtcdSourceOverManifestBoundRefused(t *testing.T) {
	e := NewEtcd(config.Source{Name: "registry", Type: config.TypeEtcd, Key: "/pods/", Timeout: 5e9}, manyKeysKV{keys: manifest.MaxSourceManifests/manifest.MaxFileManifests + 1}, testLogger(t))
	_, err := e.Read(context.Background())
	if !errors.Is(err, manifest.ErrTooManyManifests) || !strings.Contains(err.Error(), "registry:") {
		t.Fatalf("read error %v, want ErrTooManyManifests naming the source", err)
	}
}
