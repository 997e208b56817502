package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// addManifestSeeds adds every manifest file of the test corpora
// (validate/testdata, manifest/testdata) to f's seeds, through add.
func addManifestSeeds(f *testing.F, add func(data []byte)) {
	f.Helper()
	for _, data := range testkit.Corpus(f, 50, filepath.Join("..", "validate", "testdata"), filepath.Join("..", "manifest", "testdata")) {
		add(data)
	}
	add([]byte(podListYAML("1", "a", "b")))
	add([]byte("[]"))
	add([]byte(""))
	// The hostile manifests and Compose files of the source's own tests of
	// builds and Compose projects (those of the other packages' tests seed
	// FuzzDecodeValidate and FuzzCompose: here they would spend a short
	// fuzz budget on decoding).
	for _, s := range testkit.Literals(f, isManifestOrCompose, "build_test.go", "compose_test.go") {
		add([]byte(s))
	}
}

// isManifestOrCompose reports whether s reads as a manifest or a Compose
// file (a test's input, not its message).
func isManifestOrCompose(s string) bool {
	return strings.Contains(s, "v1beta1") || strings.Contains(s, "services:")
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// revisionOf is the revision HTTP and push sources give a body.
func revisionOf(body []byte) string {
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:])[:16]
}

// checkOrigins fails when a manifest or an error does not name source
// (and file, when not "").
func checkOrigins(t *testing.T, ms []manifest.Sourced, err error, source, file string) {
	t.Helper()
	for _, s := range ms {
		if s.Origin.Source != source || (file != "" && s.Origin.File != file) {
			t.Fatalf("manifest %q from %+v, want source %q file %q", s.Manifest.ID, s.Origin, source, file)
		}
	}
	for _, e := range validate.Flatten(err) {
		if e.Origin.Source != source || (file != "" && e.Origin.File != file) {
			t.Fatalf("error %q from %+v, want source %q file %q", e, e.Origin, source, file)
		}
	}
}

// bodyTransport answers every request with 200 and body.
type bodyTransport struct {
	body          []byte
	declareLength bool
}

func (b bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	length := int64(-1)
	if b.declareLength {
		length = int64(len(b.body))
	}
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/yaml"}}, ContentLength: length,
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: req,
	}, nil
}

// FuzzHTTPBody serves its input as the HTTP source's body (with and
// without Content-Length) and fetches it. fetch must not panic; a body
// over manifest.MaxSize is refused as too large; a body that decodes is
// named by its hash and every manifest and error names the source; a
// second fetch of the same body gives the same result.
func FuzzHTTPBody(f *testing.F) {
	addManifestSeeds(f, func(data []byte) { f.Add(data, true) })
	f.Add([]byte("{\"version\": \"v1beta1\", \"id\": \"a\"}\n{\"id\": \"b\"}\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, declareLength bool) {
		h := NewHTTP(config.Source{Name: "web", Type: config.TypeHTTP, URL: "https://cfg.example/m.yaml", Timeout: 10 * time.Second}, quietLogger())
		h.client.Transport = bodyTransport{body: body, declareLength: declareLength}
		snap, notModified, err := h.fetch(context.Background())
		if notModified {
			t.Fatal("a 200 taken as not modified")
		}
		if len(body) > manifest.MaxSize {
			if !errors.Is(err, manifest.ErrTooLarge) {
				t.Fatalf("a body of %d bytes: %v, want %v", len(body), err, manifest.ErrTooLarge)
			}
			return
		}
		checkOrigins(t, snap.Manifests, err, "web", "")
		if err == nil && (snap.Revision != revisionOf(body) || snap.Files != 1) {
			t.Fatalf("snapshot %+v, want revision %s, 1 file", snap, revisionOf(body))
		}
		again, _, err2 := h.fetch(context.Background())
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(snap, again) {
			t.Fatalf("a second fetch of the same body differs:\n%v %+v\n%v %+v", err, snap, err2, again)
		}
	})
}

// fakeKV is an etcd holding fixed keys, as EtcdKV sees it.
type fakeKV struct{ kvs []*mvccpb.KeyValue }

func (f fakeKV) Get(_ context.Context, key string, _ ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	resp := &clientv3.GetResponse{Header: &etcdserverpb.ResponseHeader{Revision: 100}}
	for _, kv := range f.kvs {
		if bytes.HasPrefix(kv.Key, []byte(key)) {
			resp.Kvs = append(resp.Kvs, kv)
		}
	}
	resp.Count = int64(len(resp.Kvs))
	return resp, nil
}

func (fakeKV) Watch(context.Context, string, ...clientv3.OpOption) clientv3.WatchChan {
	return make(chan clientv3.WatchResponse)
}

// FuzzEtcdValue gives its inputs to the etcd source as the values of two
// keys under its prefix and reads them. The read must not panic; every
// manifest and error names its key; the set's revision is the newest mod
// revision; blank values count as no file.
func FuzzEtcdValue(f *testing.F) {
	addManifestSeeds(f, func(data []byte) { f.Add(data, []byte(podYAML("other", "1"))) })
	f.Add([]byte("  \n"), []byte(""))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		kv := fakeKV{kvs: []*mvccpb.KeyValue{
			{Key: []byte("/hostlet/m/a"), Value: a, ModRevision: 7},
			{Key: []byte("/hostlet/m/b"), Value: b, ModRevision: 9},
		}}
		e := NewEtcd(config.Source{Name: "reg", Type: config.TypeEtcd, Key: "/hostlet/m/", Timeout: time.Second}, kv, quietLogger())
		snap, rev, err := e.read(context.Background())
		if err != nil {
			for _, fe := range validate.Flatten(err) {
				if fe.Origin.Source != "reg" || (fe.Origin.File != "/hostlet/m/a" && fe.Origin.File != "/hostlet/m/b") {
					t.Fatalf("error %q from %+v, want source reg and one of the keys", fe, fe.Origin)
				}
			}
			return
		}
		if rev != 100 || snap.Revision != "9" {
			t.Fatalf("store revision %d, set revision %q, want 100 and 9", rev, snap.Revision)
		}
		files := 0
		for _, v := range [][]byte{a, b} {
			if len(bytes.TrimSpace(v)) > 0 {
				files++
			}
		}
		if snap.Files > files {
			t.Fatalf("%d files from %d non-blank values", snap.Files, files)
		}
		for _, s := range snap.Manifests {
			if s.Origin.Source != "reg" || (s.Origin.File != "/hostlet/m/a" && s.Origin.File != "/hostlet/m/b") {
				t.Fatalf("manifest %q from %+v", s.Manifest.ID, s.Origin)
			}
		}
	})
}

// FuzzPushBody posts its input to the push source's handler (token
// checked) through a recorder. It must not panic; the answer is JSON
// with 200 (the set was delivered, named by the body's hash, every id
// accepted), 400 (with the errors) or 413; nothing is delivered unless
// 200.
func FuzzPushBody(f *testing.F) {
	addManifestSeeds(f, func(data []byte) { f.Add(data) })
	p := NewPush(config.Source{Name: "push", Type: config.TypePush}, validate.Options{}, quietLogger())
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan Update, 1)
	done := make(chan struct{})
	// The merge's part: take each update, answer it (the handler answers
	// only then) and pass it on for the checks.
	taken := make(chan Update)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case u := <-taken:
				ids := []string{}
				for _, s := range u.Manifests {
					ids = append(ids, s.Manifest.ID)
				}
				u.Reply <- Applied{Accepted: ids}
				select {
				case out <- u:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	go func() {
		defer close(done)
		p.Run(ctx, taken)
	}()
	f.Cleanup(func() {
		cancel()
		<-done
	})
	h := p.Handler(func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer t" })
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/manifests", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var resp PushResponse
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
			t.Fatalf("status %d: body is not JSON: %v\n%s", rec.Code, err, rec.Body)
		}
		switch rec.Code {
		case http.StatusOK:
			select {
			case u := <-out:
				if u.Source != "push" || u.Revision != revisionOf(body) || resp.Revision != u.Revision {
					t.Fatalf("delivered %s@%s, answered %s; want push@%s", u.Source, u.Revision, resp.Revision, revisionOf(body))
				}
				if len(resp.Accepted) != len(u.Manifests) || len(resp.Errors) > 0 {
					t.Fatalf("200 with %d accepted, %d errors for %d manifests delivered", len(resp.Accepted), len(resp.Errors), len(u.Manifests))
				}
				checkOrigins(t, u.Manifests, nil, "push", "")
			case <-time.After(10 * time.Second):
				t.Fatal("200 but nothing delivered within 10s")
			}
		case http.StatusBadRequest:
			if len(resp.Errors) == 0 && resp.Error == "" {
				t.Fatalf("400 without an error: %s", rec.Body)
			}
		case http.StatusRequestEntityTooLarge:
			if len(body) <= MaxPushSize {
				t.Fatalf("413 for %d bytes", len(body))
			}
		default:
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		select {
		case u := <-out:
			t.Fatalf("status %d, yet %s@%s delivered", rec.Code, u.Source, u.Revision)
		default:
		}
	})
}
