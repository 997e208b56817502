package sources

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
)

// headerRecorder serves a manifest and records the headers of every
// request.
type headerRecorder struct {
	*httptest.Server
	mu   gosync.Mutex
	seen []http.Header
}

func newHeaderRecorder(t *testing.T, h http.HandlerFunc) *headerRecorder {
	r := &headerRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Header.Clone())
		r.mu.Unlock()
		h(w, req)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *headerRecorder) headers() []http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.seen...)
}

// TestHTTPRedirectDropsSecretHeaders: configured headers (and the URL's
// credentials) go to the configured origin only; a redirect to another
// host (another name, or another port) gets none of them, while a
// redirect within the origin keeps them. The fetch itself still works.
func TestHTTPRedirectDropsSecretHeaders(t *testing.T) {
	const apiKey = "key-0d9f3b7a51"
	const bearer = "Bearer tok-77c1e0a2"
	const urlPassword = "urlpw-3e8a0b"
	body := podYAML("a", "1")
	target := newHeaderRecorder(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) })
	_, port, _ := strings.Cut(target.Listener.Addr().String(), ":")
	tests := []struct {
		name string
		// location is where the origin redirects /m to.
		location string
		// sent: whether the redirect target must see the secrets.
		sent bool
	}{
		{name: "another host name", location: "http://localhost:" + port + "/m"},
		{name: "another port", location: target.URL + "/m"},
		{name: "the same origin", location: "/final", sent: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			origin := newHeaderRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/final" {
					_, _ = w.Write([]byte(body))
					return
				}
				http.Redirect(w, r, tc.location, http.StatusFound)
			})
			before := len(target.headers())
			raw := "http://" + url.UserPassword("ops", urlPassword).String() + "@" + strings.TrimPrefix(origin.URL, "http://") + "/m"
			h := NewHTTP(config.Source{Name: "cmdb", Type: config.TypeHTTP, URL: raw, Interval: time.Hour, Timeout: 10 * time.Second,
				Headers: map[string]string{"X-Api-Key": apiKey, "Authorization": bearer}}, testLogger(t))
			snap, _, err := h.fetch(t.Context())
			if err != nil || len(snap.Manifests) != 1 {
				t.Fatalf("fetch through the redirect: %d manifests, %v", len(snap.Manifests), err)
			}
			first := origin.headers()[0]
			if first.Get("X-Api-Key") != apiKey || first.Get("Authorization") != bearer {
				t.Errorf("the configured origin got headers %v, want the configured ones", first)
			}
			var got []http.Header
			if tc.location == "/final" {
				got = origin.headers()[1:]
			} else {
				got = target.headers()[before:]
			}
			if len(got) != 1 {
				t.Fatalf("%d requests reached the redirect target, want 1", len(got))
			}
			hasSecret := false
			for k, vs := range got[0] {
				for _, v := range vs {
					for _, s := range []string{apiKey, bearer, "tok-77c1e0a2", urlPassword} {
						if strings.Contains(v, s) {
							hasSecret = true
							if !tc.sent {
								t.Errorf("the redirect target %s got header %s: %s", tc.location, k, v)
							}
							break
						}
					}
				}
			}
			if tc.sent && !hasSecret {
				t.Errorf("a redirect within the origin lost the configured headers: %v", got[0])
			}
		})
	}
}

// TestSameOrigin: what a redirect may carry configured headers to.
func TestSameOrigin(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"https://cmdb.example/a", "https://cmdb.example/b", true},
		{"https://cmdb.example/a", "https://CMDB.example:443/b", true},
		{"http://cmdb.example/a", "http://cmdb.example:80/b", true},
		{"https://cmdb.example/a", "http://cmdb.example/b", false},
		{"https://cmdb.example/a", "https://evil.example/b", false},
		{"https://cmdb.example/a", "https://sub.cmdb.example/b", false},
		{"https://cmdb.example/a", "https://cmdb.example:8443/b", false},
		{"http://cmdb.example/a", "https://cmdb.example/b", false},
	}
	for _, tc := range tests {
		t.Run(tc.from+" -> "+tc.to, func(t *testing.T) {
			from, _ := url.Parse(tc.from)
			to, _ := url.Parse(tc.to)
			if got := sameOrigin(from, to); got != tc.want {
				t.Errorf("sameOrigin = %v, want %v", got, tc.want)
			}
		})
	}
}
