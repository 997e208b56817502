package imagepolicy_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/imagepolicy"
	"github.com/hostlet/hostlet/manifest"
)

// The tags the registry tests push, and the shapes a real repository
// mixes in.
var registryTags = []string{"1.4.2", "1.4.3", "1.5.0", "2.0.0", "2.0.0-rc.1", "1.4.3-alpine", "latest"}

func TestChooseTheNewestAllowedTag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  manifest.ImagePolicy
		current string
		tags    []string
		veto    imagepolicy.Veto
		want    string
		skipped []string // "tag: reason" of the tags passed over
	}{
		{name: "tilde keeps the minor", policy: manifest.ImagePolicy{Semver: "~1.4"}, current: "1.4.2", tags: registryTags,
			want: "1.4.3", skipped: []string{"2.0.0: outside ~1.4", "2.0.0-rc.1: a prerelease (allowPrerelease is false)", "1.5.0: outside ~1.4"}},
		{name: "caret keeps the major", policy: manifest.ImagePolicy{Semver: "^1"}, current: "1.4.2", tags: registryTags,
			want: "1.5.0", skipped: []string{"2.0.0: outside ^1", "2.0.0-rc.1: a prerelease (allowPrerelease is false)"}},
		{name: "a range", policy: manifest.ImagePolicy{Semver: ">=2.0 <3"}, current: "1.4.2", tags: registryTags, want: "2.0.0"},
		{name: "prereleases refused by default", policy: manifest.ImagePolicy{Semver: ">=2.0.0-0"}, current: "1.5.0",
			tags: []string{"2.0.0-rc.1"}, skipped: []string{"2.0.0-rc.1: a prerelease (allowPrerelease is false)"}},
		{name: "prereleases allowed", policy: manifest.ImagePolicy{Semver: "^2.0.0-0", AllowPrerelease: true}, current: "1.5.0",
			tags: []string{"2.0.0-rc.1", "2.0.0-rc.2", "2.0.0-beta.10"}, want: "2.0.0-rc.2"},
		{name: "a release after its prereleases", policy: manifest.ImagePolicy{Semver: "^2", AllowPrerelease: true}, current: "2.0.0-rc.1",
			tags: []string{"2.0.0-rc.2", "2.0.0"}, want: "2.0.0"},
		{name: "beta10 after beta9", policy: manifest.ImagePolicy{Semver: "*", AllowPrerelease: true}, current: "3.0.0-beta9",
			tags: []string{"3.0.0-beta10", "3.0.0-beta2"}, want: "3.0.0-beta10"},
		{name: "never backwards", policy: manifest.ImagePolicy{Semver: "*"}, current: "1.5.0", tags: []string{"1.4.3", "1.5.0", "0.9"}, want: ""},
		{name: "precision kept", policy: manifest.ImagePolicy{Semver: "^1"}, current: "1.4", tags: []string{"1.5", "1.5.0", "1.6.1"},
			want: "1.5", skipped: []string{"1.6.1: written with 3 numbers, not 2"}},
		{name: "a variant suffix kept", policy: manifest.ImagePolicy{Semver: "~1.4"}, current: "1.4.2-alpine",
			tags: []string{"1.4.3", "1.4.3-alpine", "1.4.4-bookworm"}, want: "1.4.3-alpine",
			skipped: []string{"1.4.4-bookworm: another variant (-bookworm)"}},
		{name: "a plain tag never moves to a variant", policy: manifest.ImagePolicy{Semver: "~1.4"}, current: "1.4.2",
			tags: []string{"1.4.3", "1.4.4-alpine"}, want: "1.4.3", skipped: []string{"1.4.4-alpine: another variant (-alpine)"}},
		{name: "a v prefix kept", policy: manifest.ImagePolicy{Semver: "^1"}, current: "v1.2.0", tags: []string{"1.4.0", "v1.3.0"}, want: "v1.3.0",
			skipped: []string{"1.4.0: another prefix"}},
		{name: "a filter with a version group", policy: manifest.ImagePolicy{Filter: `(?P<version>\d+\.\d+\.\d+)-alpine`, Semver: "^1"},
			current: "1.4.2-alpine", tags: []string{"1.4.3-alpine", "1.9.0", "2.0.0-alpine"}, want: "1.4.3-alpine",
			skipped: []string{"2.0.0-alpine: outside ^1"}},
		{name: "a filter alone orders by the version", policy: manifest.ImagePolicy{Filter: `build-(?P<version>\d+)`},
			current: "build-9", tags: []string{"build-10", "build-8", "main-11"}, want: "build-10"},
		{name: "a four-number version", policy: manifest.ImagePolicy{Semver: "^5"}, current: "5.1.2.3", tags: []string{"5.1.2.4", "5.1.2"}, want: "5.1.2.4"},
		{name: "a vetoed tag is passed over for an older one", policy: manifest.ImagePolicy{Semver: "~1.4"}, current: "1.4.2",
			tags: []string{"1.4.3", "1.4.4"}, veto: vetoTag("1.4.4", "rolled back on web-2"), want: "1.4.3",
			skipped: []string{"1.4.4: rolled back on web-2"}},
		{name: "every newer tag vetoed", policy: manifest.ImagePolicy{Semver: "~1.4"}, current: "1.4.2",
			tags: []string{"1.4.3"}, veto: vetoTag("1.4.3", "held"), skipped: []string{"1.4.3: held"}},
		{name: "prerelease numbers with leading zeros", policy: manifest.ImagePolicy{Semver: "*", AllowPrerelease: true}, current: "1.0.0-beta01",
			tags: []string{"1.0.0-beta02", "1.0.0-beta03"}, want: "1.0.0-beta03"},
		{name: "rc.5 never goes back to rc01", policy: manifest.ImagePolicy{Semver: "*", AllowPrerelease: true}, current: "2.0.0-rc.5",
			tags: []string{"2.0.0-rc01", "2.0.0-rc.4"}, want: ""},
		{name: "preview is a prerelease", policy: manifest.ImagePolicy{Semver: "^2.0.0-0", AllowPrerelease: true}, current: "2.0.0-preview1",
			tags: []string{"2.0.0-preview2", "2.0.0"}, want: "2.0.0"},
		{name: "a word that starts as a prerelease is a variant", policy: manifest.ImagePolicy{Semver: "*", AllowPrerelease: true}, current: "1.0.0-pretty",
			tags: []string{"1.0.1-pretty", "1.0.1"}, want: "1.0.1-pretty", skipped: nil},
		{name: "leading zeros are no version", policy: manifest.ImagePolicy{Semver: "*"}, current: "1.4.0",
			tags: []string{"01.5.0", "1.5.0"}, want: "1.5.0"},
		{name: "tags that are no versions are passed over quietly", policy: manifest.ImagePolicy{Semver: "*"}, current: "1.0",
			tags: []string{"latest", "main", "sha-0123abcd", "1.1", ""}, want: "1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := imagepolicy.Compile(tc.policy)
			if err != nil {
				t.Fatal(err)
			}
			d, err := c.Choose(tc.current, tc.tags, tc.veto)
			if err != nil {
				t.Fatal(err)
			}
			var skipped []string
			for _, s := range d.Skipped {
				skipped = append(skipped, s.Tag+": "+s.Reason)
			}
			if d.Chosen != tc.want || !slices.Equal(skipped, tc.skipped) {
				t.Errorf("chose %q, skipped %q; want %q, skipped %q", d.Chosen, skipped, tc.want, tc.skipped)
			}
		})
	}
}

func vetoTag(tag, reason string) imagepolicy.Veto {
	return func(t string) string {
		if t == tag {
			return reason
		}
		return ""
	}
}

func TestCompileNamesTheBadField(t *testing.T) {
	for _, tc := range []struct {
		policy manifest.ImagePolicy
		field  string
	}{
		{manifest.ImagePolicy{Semver: "~1.4 || banana"}, "semver"},
		{manifest.ImagePolicy{Filter: `(?P<version>\d+`}, "filter"},
		{manifest.ImagePolicy{Semver: "^1", Pin: "sha"}, "pin"},
		{manifest.ImagePolicy{}, "semver"},
		{manifest.ImagePolicy{Filter: strings.Repeat("a", 513)}, "filter"},
	} {
		_, err := imagepolicy.Compile(tc.policy)
		var fe *imagepolicy.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("Compile(%+v) = %v, want an error on %s", tc.policy, err, tc.field)
		}
	}
}

func TestTheCurrentTagMustBeAVersion(t *testing.T) {
	c, err := imagepolicy.Compile(manifest.ImagePolicy{Semver: "^1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Choose("latest", registryTags, nil); err == nil || !strings.Contains(err.Error(), `"latest"`) {
		t.Errorf("Choose from latest: %v, want an error naming the tag", err)
	}
}

// The skipped list stays bounded however many tags a repository has.
func TestSkippedTagsAreBounded(t *testing.T) {
	c, err := imagepolicy.Compile(manifest.ImagePolicy{Semver: "~1.0"})
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for i := range 100 {
		tags = append(tags, "2.1."+strconv.Itoa(i))
	}
	d, err := c.Choose("1.0.0", tags, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Skipped) != imagepolicy.MaxSkipsShown || d.SkippedMore != 100-imagepolicy.MaxSkipsShown {
		t.Errorf("%d skipped shown, %d more; want %d and %d", len(d.Skipped), d.SkippedMore, imagepolicy.MaxSkipsShown, 100-imagepolicy.MaxSkipsShown)
	}
}
