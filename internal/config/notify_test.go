package config

import (
	"reflect"
	"strings"
	"testing"
)

// TestNotifyErrors: every bad notify target is reported at once, each
// error naming its key, and no error quotes a URL.
func TestNotifyErrors(t *testing.T) {
	t.Setenv("HOSTLET_CONFIG", "")
	tests := []struct {
		name string
		body string
		want []string
	}{
		{name: "bad event", body: "notify:\n- {url: https://h/x}\n- {url: https://h/y, events: [failed, rollbak]}\n",
			want: []string{`key "notify[1].events[1]": "rollbak" is not one of rollback, failed, source-error, rejected, recovered`}},
		{name: "url and urlFile", body: "notify:\n- {url: \"slack://tok-a/tok-b/tok-c\", urlFile: /run/secrets/slack}\n",
			want: []string{`key "notify[0].url": set url or urlFile, not both`}},
		{name: "neither url nor urlFile", body: "notify:\n- {name: ops, events: [failed]}\n",
			want: []string{`key "notify[0].url": required (or urlFile)`}},
		{name: "bad name", body: "notify:\n- {name: Ops Team, url: https://h/x}\n",
			want: []string{`key "notify[0].name": "Ops Team" must be lowercase`}},
		{name: "duplicate name", body: "notify:\n- {name: ops, url: https://h/x}\n- {name: ops, url: https://h/y}\n",
			want: []string{`key "notify[1].name": duplicate target name "ops" (also notify[0])`}},
		{name: "unknown key", body: "notify:\n- {url: https://h/x, secret: s3cr3t}\n",
			want: []string{`unknown key "notify[0].secret"`}},
		{name: "all at once", body: "notify:\n- {events: [x]}\n- {url: https://h/x, urlFile: /f, events: [y]}\n",
			want: []string{`"notify[0].url": required`, `"notify[0].events[0]": "x"`, `"notify[1].url": set url or urlFile`, `"notify[1].events[0]": "y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tt.body))
			if err == nil {
				t.Fatalf("Load succeeded, want an error containing %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, secret := range []string{"tok-a", "tok-b", "tok-c", "s3cr3t"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q quotes %q", err, secret)
				}
			}
		})
	}
}

// TestNotifyDefaults: no targets by default; a target without a name is
// named notify[i]; events are kept as written (empty: all).
func TestNotifyDefaults(t *testing.T) {
	t.Setenv("HOSTLET_CONFIG", "")
	tests := []struct {
		name string
		body string
		want []Notify
	}{
		{name: "none", body: "hostname: h\n", want: []Notify{}},
		{name: "targets", body: `
notify:
  - url: https://hooks.example.com/hostlet
    secretFile: /etc/hostlet/webhook.secret
    events: [rollback, failed]
  - name: ops-slack
    urlFile: /etc/hostlet/slack.url
`, want: []Notify{
			{Name: "notify[0]", URL: "https://hooks.example.com/hostlet", SecretFile: "/etc/hostlet/webhook.secret", Events: []string{"rollback", "failed"}},
			{Name: "ops-slack", URLFile: "/etc/hostlet/slack.url"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(writeConfig(t, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Notify
			if got == nil {
				got = []Notify{}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("notify = %+v, want %+v", got, tt.want)
			}
		})
	}
}
