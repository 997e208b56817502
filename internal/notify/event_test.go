package notify

import "testing"

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
