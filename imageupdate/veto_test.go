package imageupdate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/imageupdate"
	"github.com/hostlet/hostlet/manifest"
)

// A tag a host rolled back is skipped, naming the host, the revision and
// why, until a newer one exists (or it is included on purpose); a held
// pod moves nowhere; other pods and other repositories are not touched.
func TestRollbacksAndHoldsAreNotGoneAgainst(t *testing.T) {
	states := []imageupdate.HostState{
		{Host: "web-2", Pod: "web", Images: map[string]string{"app": "registry.test/shop/web:1.4.3"}, Revision: "0123456789abcdef0123", Reason: "container app keeps crashing"},
		{Host: "web-3", Pod: "db", HeldBy: "alice", Reason: "migrating"},
	}
	web := imageupdate.Target{Pod: "web", Container: "app", Resolved: "registry.test/shop/web:1.4.2", Policy: manifest.ImagePolicy{Semver: "~1.4"}}
	for _, tc := range []struct {
		name     string
		target   imageupdate.Target
		tags     []string
		include  bool
		want     string
		wantSkip string
	}{
		{name: "the rolled-back tag skipped", target: web, tags: []string{"1.4.3"},
			wantSkip: "1.4.3: rolled back on web-2 at 0123456789ab: container app keeps crashing"},
		{name: "a newer tag chosen over it", target: web, tags: []string{"1.4.3", "1.4.4"}, want: "1.4.4"},
		{name: "included on purpose", target: web, tags: []string{"1.4.3"}, include: true, want: "1.4.3"},
		{name: "another container of the pod", target: imageupdate.Target{Pod: "web", Container: "side", Resolved: "registry.test/shop/web:1.4.2", Policy: web.Policy},
			tags: []string{"1.4.3"}, want: "1.4.3"},
		{name: "a held pod", target: imageupdate.Target{Pod: "db", Container: "app", Resolved: "registry.test/shop/web:1.4.2", Policy: web.Policy},
			tags: []string{"1.4.3"}, wantSkip: "1.4.3: the pod is held on web-3 by alice: migrating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := &fakeRegistry{listings: map[string]int{}, tags: map[string][]string{"registry.test/shop/web": tc.tags}}
			us := imageupdate.Decide(t.Context(), reg, []imageupdate.Target{tc.target}, imageupdate.VetoFrom(states, tc.include))
			u := us[0]
			var skips []string
			for _, s := range u.Skipped {
				skips = append(skips, s.Tag+": "+s.Reason)
			}
			if u.To != tc.want || tc.wantSkip != "" && !strings.Contains(strings.Join(skips, "\n"), tc.wantSkip) || u.Err != "" {
				t.Errorf("to %q, skipped %q, error %q; want to %q, skipped %q", u.To, skips, u.Err, tc.want, tc.wantSkip)
			}
		})
	}
}
