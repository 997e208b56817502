package sync_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
)

// A container that must not run as root and names no user runs only an
// image whose USER is a numeric user other than 0; otherwise its pod
// fails before the running version is stopped.
func TestRunAsNonRootChecksTheImagesUser(t *testing.T) {
	tests := []struct {
		user, want string
	}{
		{"1000", ""},
		{"1000:1000", ""},
		{"", "runs as root (it names no user)"},
		{"0", `runs as root (user "0")`},
		{"root:root", `runs as root (user "root:root")`},
		{"nginx", `runs as user "nginx", a name that cannot be checked`},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			running := onePod("web")
			fake := converge(t, nil, pods(running))
			next := onePod("web")
			next.Containers[0].Image, next.Containers[0].RunAsNonRoot = "example.org/app:2", true
			fake.SetImageUser("example.org/app:2", tt.user)
			plan := hsync.MakePlan(pods(next), listed(t, fake), hsync.PlanOptions{})
			results := hsync.Apply(t.Context(), fake, plan, tableApplyOptions(nil), slog.New(slog.DiscardHandler))
			var err error
			if len(results) == 1 {
				err = results[0].Err
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("apply: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), "container app: runAsNonRoot, but image example.org/app:2 "+tt.want)):
				t.Fatalf("apply: %v, want the image's user refused", err)
			}
			images := map[string]bool{}
			for _, c := range listed(t, fake) {
				images[c.Image] = true
			}
			if tt.want != "" && !images["example.org/app:1"] {
				t.Errorf("the running version was stopped: %v", images)
			}
		})
	}
	if m := onePod("x"); manifest.RootUser(m.Containers[0].User) == "" {
		t.Error("no user passed as non-root")
	}
}
