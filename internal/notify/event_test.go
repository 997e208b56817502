package notify

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	tests := []struct {
		name string
		n    Notification
		want string
	}{
		{name: "full", n: Notification{Host: "h", Event: "failed", Pod: "api", Reason: "ErrImagePull", Revision: "0123456789abcdef", Message: "not found"},
			want: "hostlet h: failed api: ErrImagePull (0123456789ab)\nnot found"},
		{name: "no pod, no revision", n: Notification{Host: "h", Event: "source-error", Reason: "source git", Message: "clone: timeout"},
			want: "hostlet h: source-error: source git\nclone: timeout"},
		{name: "algorithm prefix", n: Notification{Host: "h", Event: "recovered", Pod: "api", Revision: "sha256:00112233445566778899"},
			want: "hostlet h: recovered api (001122334455)"},
		{name: "short revision", n: Notification{Host: "h", Event: "rejected", Pod: "api", Revision: "42"},
			want: "hostlet h: rejected api (42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.n.Text(); got != tt.want {
				t.Errorf("Text = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestScrub: an error quoting a target's URL keeps no part of it that may
// be a token, and still unwraps to the original.
func TestScrub(t *testing.T) {
	sentinel := errors.New("boom")
	tests := []struct {
		name    string
		raw     string
		msg     string
		secrets []string
	}{
		{name: "webhook path and query", raw: "https://hooks.example.com/T0001/B0002/XXXXSECRET?token=QUERYTOKEN",
			msg: `Post "https://hooks.example.com/T0001/B0002/XXXXSECRET?token=QUERYTOKEN": dial tcp: refused`, secrets: []string{"XXXXSECRET", "QUERYTOKEN", "T0001"}},
		{name: "telegram API URL", raw: "telegram://110201543:AAHdqTcvCH1vGWJx@telegram?chats=@mychannel",
			msg: `Post "https://api.telegram.org/bot110201543:AAHdqTcvCH1vGWJx/sendMessage": EOF`, secrets: []string{"110201543", "AAHdqTcvCH1vGWJx"}},
		{name: "slack host token", raw: "slack://tokenaaaa/tokenbbbb/tokencccc",
			msg: "invalid token tokenaaaa/tokenbbbb/tokencccc", secrets: []string{"tokenaaaa", "tokenbbbb", "tokencccc"}},
		{name: "userinfo of another URL", raw: "https://h/x", msg: "via https://user:hunter22@proxy:3128/x", secrets: []string{"hunter22"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := scrub(fmt.Errorf("%s: %w", tt.msg, sentinel), tt.raw)
			for _, s := range tt.secrets {
				if strings.Contains(err.Error(), s) {
					t.Errorf("%q holds %q", err, s)
				}
			}
			if !errors.Is(err, sentinel) {
				t.Errorf("%v does not unwrap to the original", err)
			}
		})
	}
}

func TestEventName(t *testing.T) {
	for typ, want := range map[string]string{
		"rollback": "rollback", "failed": "failed", "pull-failed": "failed", "build-failed": "failed",
		"source-error": "source-error", "rejected": "rejected", "recovered": "recovered",
		"create": "", "start": "", "stop": "", "remove": "", "restart": "", "unhealthy": "", "build": "",
	} {
		if got := eventName(typ); got != want {
			t.Errorf("eventName(%q) = %q, want %q", typ, got, want)
		}
	}
}
