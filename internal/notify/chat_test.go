package notify

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/events"
)

// TestChatThroughShoutrrr sends through shoutrrr's generic service to a
// local receiver, from a urlFile: the chat path for real. A failing
// receiver is retried, and no log line names the URL's token.
func TestChatThroughShoutrrr(t *testing.T) {
	r := newReceiver(t, func(n int) int {
		if n == 1 {
			return http.StatusBadGateway
		}
		return http.StatusOK
	})
	const token = "tok3n-in-the-path"
	u := strings.Replace(r.srv.URL, "http://", "generic://", 1) + "/hooks/" + token + "?disabletls=yes"
	var logs logBuffer
	ev := events.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "chat", URLFile: writeFile(t, "chat.url", u+"\n")}}, Options{
		Hostname: "web-1", Log: logs.logger(),
		Revision: func(string) string { return "0123456789abcdef0123" },
		Retry:    Retry{Initial: time.Millisecond},
	})
	ev.Record(events.Event{Type: events.Rollback, Pod: "api", Reason: "StartFailed", Message: "rolled back to the previous revision"})
	waitRequests(t, r, 2)
	got := string(r.requests()[1].body)
	want := "hostlet web-1: rollback api: StartFailed (0123456789ab)\nrolled back to the previous revision"
	if got != want {
		t.Errorf("chat message = %q, want %q", got, want)
	}
	if s := waitStat(t, n, "chat", func(s Stat) bool { return s.Sent == 1 }); s.Failed != 0 {
		t.Errorf("stat = %+v", s)
	}
	if l := logs.String(); strings.Contains(l, token) || !strings.Contains(l, "retrying") {
		t.Errorf("logs name the token or not the retry:\n%s", l)
	}
}

// TestNewErrors: a bad target stops New with errors naming each key at
// fault, none quoting the URL or its token.
func TestNewErrors(t *testing.T) {
	const token = "T0KEN-secret"
	missing := t.TempDir() + "/missing"
	empty := writeFile(t, "empty", "\n")
	tests := []struct {
		name   string
		target config.Notify
		want   string
	}{
		{name: "unknown scheme", target: config.Notify{URL: "slak://" + token + "@x"}, want: `key "notify[0].url": scheme "slak" is neither http(s) nor a chat service`},
		{name: "unknown scheme from file", target: config.Notify{URLFile: writeFile(t, "u", "nope://"+token)}, want: `key "notify[0].urlFile": scheme "nope"`},
		{name: "no scheme", target: config.Notify{URL: "hooks.example.com/" + token}, want: `key "notify[0].url": the URL has no scheme`},
		{name: "not a URL", target: config.Notify{URL: "https://h/%zz" + token}, want: `key "notify[0].url": not a URL`},
		{name: "webhook without host", target: config.Notify{URL: "https:///" + token}, want: `key "notify[0].url": the https URL has no host`},
		{name: "bad chat URL", target: config.Notify{URL: "telegram://" + token + "@telegram"}, want: `key "notify[0].url": not a valid telegram URL`},
		{name: "unreadable urlFile", target: config.Notify{URLFile: missing}, want: `key "notify[0].urlFile": read the URL: open ` + missing},
		{name: "empty urlFile", target: config.Notify{URLFile: empty}, want: `key "notify[0].urlFile": ` + empty + " is empty"},
		{name: "unreadable secretFile", target: config.Notify{URL: "https://h/x", SecretFile: missing}, want: `key "notify[0].secretFile": read the secret`},
		{name: "empty secretFile", target: config.Notify{URL: "https://h/x", SecretFile: empty}, want: `key "notify[0].secretFile": ` + empty + " is empty"},
		{name: "secretFile on chat", target: config.Notify{URL: "generic://h/x", SecretFile: empty}, want: `key "notify[0].secretFile": only an http(s) webhook is signed`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New([]config.Notify{tt.target}, Options{})
			if err == nil {
				t.Fatalf("New succeeded, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("error %q quotes the token", err)
			}
		})
	}
}

// TestNewAllErrors: every bad target is reported, not just the first.
func TestNewAllErrors(t *testing.T) {
	_, err := New([]config.Notify{{URL: "https://h/x"}, {URL: "x://y"}, {URL: "nohost"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), `"notify[1].url"`) || !strings.Contains(err.Error(), `"notify[2].url"`) {
		t.Errorf("error %v, want notify[1] and notify[2] named", err)
	}
}

// TestChatSchemes: the chat services the docs name are known, with a
// URL of their shape.
func TestChatSchemes(t *testing.T) {
	for _, u := range []string{
		"slack://hook:WNA3PBYV6-F20DUQND3RQ-Webc4MAvoacrpPakR8phF0zi@webhook",
		"discord://token@123456789",
		"telegram://110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw@telegram?chats=@mychannel",
		"smtp://user:pass@mail.example.com:587/?from=hostlet@example.com&to=ops@example.com",
		"generic://hooks.example.com/x",
	} {
		if _, err := New([]config.Notify{{URL: u}}, Options{}); err != nil {
			t.Errorf("%s: %v", strings.SplitN(u, ":", 2)[0], err)
		}
	}
}
