package chatwire

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

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
			err := Scrub(fmt.Errorf("%s: %w", tt.msg, sentinel), tt.raw)
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
