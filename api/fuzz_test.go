package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
)

const fuzzToken = "fuzz-t0ken"

type fuzzSyncer struct{}

func (fuzzSyncer) Report() hsync.Report       { return hsync.Report{} }
func (fuzzSyncer) Healthy(time.Duration) bool { return true }

// macOf is the X-Hub-Signature-256 of body keyed with key, computed here
// independently of the server's code.
func macOf(key string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(key))
	m.Write(body)
	return m.Sum(nil)
}

// correctSignature reports whether header is, by the format GitHub
// documents, the signature of body: "sha256=" and the MAC in 64 hex
// digits (either case).
func correctSignature(header string, body []byte) bool {
	sig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(sig) != 64 {
		return false
	}
	got, err := hex.DecodeString(sig)
	return err == nil && hmac.Equal(got, macOf(fuzzToken, body))
}

// FuzzSyncSignature sends POST /sync with an arbitrary
// X-Hub-Signature-256 and body (no bearer token) through the handler. It
// must never panic, must accept (202, one sync triggered) exactly the
// correct MACs, and must refuse anything else with 401 (413 over the
// limit). The correct signature of the same body must be accepted, and
// the same with one hex digit changed refused.
func FuzzSyncSignature(f *testing.F) {
	push := []byte(`{"ref":"refs/heads/main","before":"0000000000000000000000000000000000000000","after":"3f2a9c1e","repository":{"full_name":"acme/fleet"},"commits":[{"id":"3f2a9c1e","message":"web: v2","added":[],"removed":[],"modified":["hosts/h1/web.yaml"]}]}`)
	f.Add("", push)
	f.Add("sha256="+hex.EncodeToString(macOf(fuzzToken, push)), push)
	f.Add("sha256="+strings.ToUpper(hex.EncodeToString(macOf(fuzzToken, nil))), []byte{})
	f.Add("sha256="+hex.EncodeToString(macOf("other", push)), push)
	f.Add("sha256="+strings.Repeat("0", 64), []byte("x"))
	f.Add("sha256=zz", push)
	f.Add("sha1="+strings.Repeat("0", 40), push)
	f.Add("sha256= "+strings.Repeat("0", 63), []byte{0, 1, 2})

	triggered := 0
	srv := New(Options{Token: fuzzToken, Loopback: true}, fuzzSyncer{}, nil, eventlog.NewLog(1), slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv.HandleSync(func(bool) { triggered++ })
	post := func(t *testing.T, header string, body []byte) int {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/sync", strings.NewReader(string(body)))
		req.Host = "127.0.0.1:10260"
		req.Header.Set(SignatureHeader, header)
		rec := httptest.NewRecorder()
		before := triggered
		srv.ServeHTTP(rec, req)
		if n := triggered - before; (rec.Code == http.StatusAccepted) != (n == 1) || n > 1 {
			t.Fatalf("status %d with %d syncs triggered", rec.Code, n)
		}
		return rec.Code
	}
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		if len(body) > MaxSyncBody {
			if code := post(t, header, body); code != http.StatusRequestEntityTooLarge && code != http.StatusUnauthorized {
				t.Fatalf("body of %d bytes: status %d, want 413 or 401", len(body), code)
			}
			return
		}
		want := http.StatusUnauthorized
		if correctSignature(header, body) {
			want = http.StatusAccepted
		}
		if code := post(t, header, body); code != want {
			t.Fatalf("signature %q of a %d-byte body: status %d, want %d", header, len(body), code, want)
		}
		good := hex.EncodeToString(macOf(fuzzToken, body))
		if code := post(t, "sha256="+good, body); code != http.StatusAccepted {
			t.Fatalf("the correct signature: status %d, want 202", code)
		}
		i := len(header) % len(good)
		flipped := []byte(good)
		flipped[i] = "1032547698badcfe"[strings.IndexByte("0123456789abcdef", flipped[i])]
		if code := post(t, "sha256="+string(flipped), body); code != http.StatusUnauthorized {
			t.Fatalf("a signature with digit %d changed: status %d, want 401", i, code)
		}
	})
}

// FuzzLoopbackHost: IsLoopbackHost never panics, and whatever it accepts
// is a name under localhost or a literal loopback address (an
// independent check: port and brackets cut by hand).
func FuzzLoopbackHost(f *testing.F) {
	for _, h := range []string{"127.0.0.1:10260", "[::1]:1", "localhost.", "a.localhost:80", "evil.example", "[::ffff:127.0.0.1]", "127.0.0.1.nip.io", "", "[", "]:", "::1", "LOCALHOST:x"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if !IsLoopbackHost(host) {
			return
		}
		h := host
		if i := strings.LastIndexByte(h, ']'); strings.HasPrefix(h, "[") && i > 0 {
			h = h[1:i]
		} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.Count(h, ":") == 1 {
			h = h[:i]
		}
		name := strings.TrimSuffix(strings.ToLower(h), ".")
		if name == "localhost" || strings.HasSuffix(name, ".localhost") {
			return
		}
		if ip, err := netip.ParseAddr(h); err == nil && ip.Unmap().IsLoopback() {
			return
		}
		t.Fatalf("IsLoopbackHost(%q) = true, but %q is neither under localhost nor a loopback address", host, h)
	})
}
