package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/notify/chatwire"
)

// TestChatThroughShoutrrr sends through the hostlet-notify helper and
// shoutrrr's generic service to a local receiver, from a urlFile: the chat
// path for real. A failing receiver is retried, and no log line names the
// URL's token.
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
	ev := eventlog.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "chat", URLFile: writeFile(t, "chat.url", u+"\n")}}, Options{
		Hostname: "web-1", Log: logs.logger(), Helper: helper(t),
		Revision: func(string) string { return "0123456789abcdef0123" },
		Retry:    Retry{Initial: time.Millisecond},
	})
	ev.Record(eventlog.Event{Type: eventlog.Rollback, Pod: "api", Reason: "StartFailed", Message: "rolled back to the previous revision"})
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
			_, err := New([]config.Notify{tt.target}, Options{Helper: helper(t)})
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
	_, err := New([]config.Notify{{URL: "https://h/x"}, {URL: "x://y"}, {URL: "nohost"}}, Options{Helper: helper(t)})
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
		if _, err := New([]config.Notify{{URL: u}}, Options{Helper: helper(t)}); err != nil {
			t.Errorf("%s: %v", strings.SplitN(u, ":", 2)[0], err)
		}
	}
}

// TestChatHelperKilledAtTimeout: a send that hangs (a receiver that never
// answers, through the real helper) is killed when its attempt's time is
// up, and counts as a failed attempt; the notification is given up after
// its attempts, in about their timeouts.
func TestChatHelperKilledAtTimeout(t *testing.T) {
	h := newHanging(t)
	u := strings.Replace(h.srv.URL, "http://", "generic://", 1) + "/hooks/tok3n?disabletls=yes"
	var logs logBuffer
	ev := eventlog.NewLog(100)
	const timeout = 500 * time.Millisecond
	n, _ := start(t, ev, []config.Notify{{Name: "chat", URL: u}}, Options{
		Helper: helper(t), Log: logs.logger(),
		Retry: Retry{Attempts: 2, Initial: time.Millisecond, Timeout: timeout},
	})
	begin := time.Now()
	ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: "api"})
	s := waitStat(t, n, "chat", func(s Stat) bool { return s.Failed == 1 })
	if d := time.Since(begin); d < 2*timeout || d > 2*timeout+5*time.Second {
		t.Errorf("given up after %s, want about two attempts of %s", d, timeout)
	}
	if s.Sent != 0 {
		t.Errorf("stat = %+v", s)
	}
	waitRequests(t, h.receiver, 2)
	if l := logs.String(); !strings.Contains(l, "send: hostlet-notify killed: context deadline exceeded") || strings.Contains(l, "tok3n") {
		t.Errorf("logs do not say the helper was killed, or name the token:\n%s", l)
	}
}

// TestChatHelperSeesNoURLInArgvOrEnv: a fake helper dumps its argv, its
// environment (as /proc shows them to anyone on the host) and its stdin
// for the check at New and for a send: the URL is only on stdin, argv is
// the helper alone, and the environment holds hostlet's proxy settings
// and nothing else of hostlet's.
func TestChatHelperSeesNoURLInArgvOrEnv(t *testing.T) {
	const token = "T0KEN-in-the-url"
	t.Setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
	t.Setenv("HOSTLET_DECOY", "in-hostlets-env-only")
	var wantEnv []string
	for _, k := range helperEnv {
		if v, ok := os.LookupEnv(k); ok {
			wantEnv = append(wantEnv, k+"="+v)
		}
	}
	slices.Sort(wantEnv)
	dir := t.TempDir()
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal("the fake helper needs cat:", err)
	}
	fake := filepath.Join(dir, chatwire.HelperName)
	script := fmt.Sprintf("#!/bin/sh\n%[1]s /proc/$$/cmdline > '%[2]s/argv.'$$\n%[1]s /proc/$$/environ > '%[2]s/env.'$$\n%[1]s > '%[2]s/stdin.'$$\n", cat, dir)
	if err := os.WriteFile(fake, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	ev := eventlog.NewLog(100)
	n, _ := start(t, ev, []config.Notify{{Name: "chat", URL: "slack://hook:" + token + "@webhook"}}, Options{Helper: fake})
	ev.Record(eventlog.Event{Type: eventlog.Failed, Pod: "api"})
	waitStat(t, n, "chat", func(s Stat) bool { return s.Sent == 1 })

	argvs, _ := filepath.Glob(filepath.Join(dir, "argv.*"))
	if len(argvs) != 2 {
		t.Fatalf("the helper ran %d times, want 2 (check, send)", len(argvs))
	}
	var ops []string
	for _, a := range argvs {
		pid := strings.TrimPrefix(filepath.Ext(a), ".")
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(dir, name+"."+pid))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		argv, env, stdin := read("argv"), read("env"), read("stdin")
		if got, want := nulSplit(argv), []string{"/bin/sh", fake}; !reflect.DeepEqual(got, want) {
			t.Errorf("argv %q, want %q (the interpreter and the script)", got, want)
		}
		if got := nulSplit(env); !reflect.DeepEqual(got, wantEnv) {
			t.Errorf("env %q, want %q", got, wantEnv)
		}
		if bytes.Contains(argv, []byte(token)) || bytes.Contains(env, []byte(token)) {
			t.Errorf("the token is in the helper's argv or env")
		}
		var req chatwire.Request
		if err := json.Unmarshal(stdin, &req); err != nil || !strings.Contains(req.URL, token) {
			t.Errorf("stdin %q: %v, want a request with the URL", stdin, err)
		}
		ops = append(ops, req.Op)
	}
	slices.Sort(ops)
	if want := []string{"check", "send"}; !reflect.DeepEqual(ops, want) {
		t.Errorf("ops %q, want %q", ops, want)
	}
}

// nulSplit splits a /proc cmdline or environ, sorted when it is an
// environment.
func nulSplit(b []byte) []string {
	var out []string
	for f := range strings.SplitSeq(string(b), "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	if len(out) > 0 && strings.Contains(out[0], "=") {
		slices.Sort(out)
	}
	return out
}

// TestNoHelper: without the helper beside the executable or on PATH, a
// chat target stops New, said once and naming the first chat target;
// webhooks alone need no helper; a helper that does not start is named
// with the URL's key.
func TestNoHelper(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New([]config.Notify{{URL: "https://h/x"}, {URL: "generic://h/x"}, {URL: "slack://a/b/c"}}, Options{})
	want := "notify[1]: chat targets need the hostlet-notify helper beside hostlet or on PATH (make build builds it into bin/)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if _, err := New([]config.Notify{{URL: "https://h/x"}}, Options{}); err != nil {
		t.Errorf("a webhook alone: %v", err)
	}
	missing := filepath.Join(t.TempDir(), chatwire.HelperName)
	_, err = New([]config.Notify{{URL: "generic://h/x"}}, Options{Helper: missing})
	if want := `key "notify[0].url": the URL was not checked: hostlet-notify: fork/exec ` + missing; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestFindHelper: without Options.Helper, the helper on PATH is found.
func TestFindHelper(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, chatwire.HelperName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := findHelper(""); got != p || err != nil {
		t.Errorf("findHelper = %q, %v, want %q", got, err, p)
	}
	if got, err := findHelper("/x/y"); got != "/x/y" || err != nil {
		t.Errorf("findHelper(/x/y) = %q, %v", got, err)
	}
}
