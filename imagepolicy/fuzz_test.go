package imagepolicy_test

import (
	"testing"

	"github.com/hostlet/hostlet/imagepolicy"
	"github.com/hostlet/hostlet/manifest"
)

// FuzzChoose: any policy text and tags either fail to compile or choose
// a tag among those given, never the current one, never an older one.
func FuzzChoose(f *testing.F) {
	f.Add("~1.4", `(?P<version>\d+\.\d+\.\d+)-alpine`, true, "1.4.2", "1.4.3\n2.0.0-rc.1\n1.4.3-alpine\nlatest")
	f.Add("^1", "", false, "v1.2", "v1.3\n1.3\nv1.10")
	f.Fuzz(func(t *testing.T, semver, filter string, pre bool, current, tags string) {
		c, err := imagepolicy.Compile(manifest.ImagePolicy{Semver: semver, Filter: filter, AllowPrerelease: pre})
		if err != nil {
			return
		}
		list := splitLines(tags)
		d, err := c.Choose(current, list, nil)
		if err != nil || d.Chosen == "" {
			return
		}
		if d.Chosen == current {
			t.Fatalf("chose the current tag %q", current)
		}
		found := false
		for _, tag := range list {
			found = found || tag == d.Chosen
		}
		if !found {
			t.Fatalf("chose %q, not among the tags", d.Chosen)
		}
		if back, err := c.Choose(d.Chosen, []string{current}, nil); err == nil && back.Chosen != "" {
			t.Fatalf("from %q it would go back to %q", d.Chosen, current)
		}
	})
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}
