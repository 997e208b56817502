package notify

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/testkit"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// TestWebhookDelivers: a notification arrives once, as the documented
// JSON, signed with the secret file's (trimmed) content, with the
// revision of its pod; an unsigned target gets no signature header.
func TestWebhookDelivers(t *testing.T) {
	tests := []struct {
		name   string
		secret string // "": no secretFile
	}{
		{name: "signed", secret: "s3cret-key\n"},
		{name: "unsigned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReceiver(t, nil)
			target := config.Notify{Name: "hook", URL: r.srv.URL + "/hook"}
			if tt.secret != "" {
				target.SecretFile = writeFile(t, "secret", tt.secret)
			}
			ev := eventlog.NewLog(100)
			start(t, ev, []config.Notify{target}, Options{
				Hostname: "web-1", Version: "1.2.3",
				Revision: func(pod string) string { return "rev-of-" + pod },
			})
			ev.Record(eventlog.Event{Time: t0, Type: eventlog.PullFailed, Pod: "api", Container: "app", Reason: "ErrImagePull", Message: "pull ghcr.io/x/api:1: not found"})
			ev.Record(eventlog.Event{Time: t0, Type: eventlog.Failed, Pod: "marker"})
			r.waitPod(t, "marker")

			reqs := r.requests()
			if len(reqs) != 2 {
				t.Fatalf("got %d requests, want 2 (the notification once, then the marker)", len(reqs))
			}
			got := r.notifications(t)[0]
			want := Notification{Host: "web-1", Pod: "api", Event: "failed", Type: "pull-failed", Reason: "ErrImagePull",
				Message: "pull ghcr.io/x/api:1: not found", Revision: "rev-of-api", Time: "2026-03-04T05:06:07Z"}
			if got != want {
				t.Errorf("notification = %+v, want %+v", got, want)
			}
			wantKeys := `{"host":"web-1","pod":"api","event":"failed","type":"pull-failed","reason":"ErrImagePull","message":`
			if body := string(reqs[0].body); !strings.HasPrefix(body, wantKeys) || !strings.HasSuffix(body, `"revision":"rev-of-api","time":"2026-03-04T05:06:07Z"}`) {
				t.Errorf("body = %s, want the keys in the documented order", body)
			}
			h := reqs[0].header
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			if ua := h.Get("User-Agent"); ua != "hostlet/1.2.3" {
				t.Errorf("User-Agent = %q", ua)
			}
			sig := h.Get(SignatureHeader)
			switch {
			case tt.secret == "" && sig != "":
				t.Errorf("%s = %q on an unsigned target", SignatureHeader, sig)
			case tt.secret != "" && sig != Sign([]byte(strings.TrimSpace(tt.secret)), reqs[0].body):
				t.Errorf("%s = %q, want %q", SignatureHeader, sig, Sign([]byte(strings.TrimSpace(tt.secret)), reqs[0].body))
			}
		})
	}
}

// TestSign pins the signature against a value computed elsewhere
// (printf '{"a":1}' | openssl dgst -sha256 -hmac key).
func TestSign(t *testing.T) {
	got := Sign([]byte("key"), []byte(`{"a":1}`))
	want := "sha256=88a67f24bbcdaed0e6c997404bb79a743baf44c6bab2f4c27328e3009d22e342"
	if got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

// TestFilter: a target gets the events it asks for, mapped to their
// notification names, and never the other types.
func TestFilter(t *testing.T) {
	recorded := []string{eventlog.Create, eventlog.Failed, eventlog.PullFailed, eventlog.BuildFailed, eventlog.SourceError,
		eventlog.Rejected, eventlog.Recovered, eventlog.Rollback, eventlog.Unhealthy, eventlog.Restart, eventlog.Build}
	tests := []struct {
		name   string
		events []string
		want   []string // the types received, in order
	}{
		{name: "all", want: []string{"failed", "pull-failed", "build-failed", "source-error", "rejected", "recovered", "rollback"}},
		{name: "rollback", events: []string{"rollback"}, want: []string{"rollback"}},
		{name: "failed", events: []string{"failed"}, want: []string{"failed", "pull-failed", "build-failed"}},
		{name: "three", events: []string{"source-error", "rejected", "recovered"}, want: []string{"source-error", "rejected", "recovered"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReceiver(t, nil)
			ev := eventlog.NewLog(100)
			start(t, ev, []config.Notify{{Name: "hook", URL: r.srv.URL, Events: tt.events}}, Options{})
			for _, typ := range recorded {
				ev.Record(eventlog.Event{Type: typ, Pod: "p"})
			}
			marker := tt.want[0]
			ev.Record(eventlog.Event{Type: marker, Pod: "marker"})
			var got []string
			for _, n := range r.waitPod(t, "marker") {
				if n.Pod != "marker" {
					got = append(got, n.Type)
					if eventName(n.Type) != n.Event {
						t.Errorf("type %s sent as event %q, want %q", n.Type, n.Event, eventName(n.Type))
					}
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("received %v, want %v", got, tt.want)
			}
		})
	}
}

// TestNoRedirect: a redirect is not followed (it would carry the signed
// body elsewhere): it fails like any answer but 2xx.
func TestNoRedirect(t *testing.T) {
	elsewhere := newReceiver(t, nil)
	redirect := httptest.NewServer(http.RedirectHandler(elsewhere.srv.URL, http.StatusTemporaryRedirect))
	t.Cleanup(redirect.Close)
	ev := eventlog.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "hook", URL: redirect.URL}}, Options{Retry: Retry{Attempts: 1}})
	ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: "p"})
	waitStat(t, n, "hook", func(s Stat) bool { return s.Failed == 1 })
	if got := len(elsewhere.requests()); got != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", got)
	}
}

// TestClosedPort: a webhook nobody listens on is tried Attempts times and
// counted as failed; the logs name the target by name, scheme and host,
// never by its path or query (tokens).
func TestClosedPort(t *testing.T) {
	var logs logBuffer
	host := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	ev := eventlog.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "hook", URL: "http://" + host + "/hooks/PATHSECRET?token=QUERYSECRET"}},
		Options{Log: logs.logger(), Retry: Retry{Attempts: 2, Initial: time.Millisecond}})
	ev.Record(eventlog.Event{Type: eventlog.SourceError, Reason: "source git"})
	if s := waitStat(t, n, "hook", func(s Stat) bool { return s.Failed == 1 }); s.Sent != 0 || s.Dropped != 0 {
		t.Errorf("stat = %+v, want 1 failed only", s)
	}
	l := logs.String()
	if strings.Contains(l, "SECRET") {
		t.Errorf("logs quote the URL's path or query:\n%s", l)
	}
	for _, want := range []string{"notification not delivered", "target=hook", "endpoint=http://" + host, "attempts=2", "connection refused"} {
		if !strings.Contains(l, want) {
			t.Errorf("logs do not say %q:\n%s", want, l)
		}
	}
}
