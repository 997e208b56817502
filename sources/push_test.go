package sources

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/validate"
)

type pushReply struct {
	code int
	body PushResponse
}

func post(t *testing.T, url, token string, body io.Reader) pushReply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r pushReply
	r.code = resp.StatusCode
	if err := json.NewDecoder(resp.Body).Decode(&r.body); err != nil {
		t.Fatalf("decode reply (%d): %v", resp.StatusCode, err)
	}
	return r
}

// TestPushHandler: the handler's answers, and the update a good POST makes.
func TestPushHandler(t *testing.T) {
	p := NewPush(config.Source{Name: "push", Type: config.TypePush}, validate.Options{}, testLogger(t))
	srv := httptest.NewServer(p.Handler(func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer s3cret" }))
	t.Cleanup(srv.Close)
	h := startSources(t, MergeOptions{}, p)

	tests := []struct {
		name     string
		token    string
		body     io.Reader
		code     int
		minErrs  int
		accepted []string
	}{
		{name: "no token", body: strings.NewReader(podYAML("web", "1")), code: 401},
		{name: "wrong token", token: "guess", body: strings.NewReader(podYAML("web", "1")), code: 401},
		{name: "over 1 MiB with a length", token: "s3cret", body: strings.NewReader(strings.Repeat("#", 2<<20)), code: 413},
		{name: "over 1 MiB streamed", token: "s3cret", body: io.MultiReader(strings.NewReader(strings.Repeat("#", 2<<20))), code: 413},
		{name: "invalid: every error listed", token: "s3cret", body: strings.NewReader(invalidPodYAML("web") + "---\n" + podYAML("web", "dup")), code: 400, minErrs: 3},
		{name: "valid", token: "s3cret", body: strings.NewReader(podListYAML("1", "web", "api")), code: 200, accepted: []string{"web", "api"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, srv.URL, tt.token, tt.body)
			if r.code != tt.code {
				t.Fatalf("status %d (%+v), want %d", r.code, r.body, tt.code)
			}
			if len(r.body.Errors) < tt.minErrs {
				t.Errorf("%d errors %v, want at least %d", len(r.body.Errors), r.body.Errors, tt.minErrs)
			}
			for _, e := range r.body.Errors {
				if e.Origin.Source != "push" || e.Detail == "" {
					t.Errorf("error %+v does not name its origin and detail", e)
				}
			}
			if strings.Join(r.body.Accepted, ",") != strings.Join(tt.accepted, ",") {
				t.Errorf("accepted %v, want %v", r.body.Accepted, tt.accepted)
			}
			if tt.code == 200 {
				h.waitSet(t, 2*time.Second, []string{"web=1", "api=1"}, r.body.Revision)
			} else if st := h.m.State(); len(st.Accepted) != 0 || st.Sources[0].Revision != "" {
				t.Errorf("a refused POST changed the source: %+v", st.Sources[0])
			}
		})
	}
}

// TestPushAfterStop: once the source stopped, a POST is answered 503 at
// once instead of waiting for a reader that is gone.
func TestPushAfterStop(t *testing.T) {
	p := NewPush(config.Source{Name: "push", Type: config.TypePush}, validate.Options{}, testLogger(t))
	srv := httptest.NewServer(p.Handler(func(*http.Request) bool { return true }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, make(chan Update))
	}()
	cancel()
	<-done
	start := time.Now()
	r := post(t, srv.URL, "", strings.NewReader(podYAML("web", "1")))
	if r.code != http.StatusServiceUnavailable || time.Since(start) > 5*time.Second {
		t.Errorf("POST after stop: %d after %s, want 503 at once", r.code, time.Since(start))
	}
}
