package compose_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/validate"
)

// A service's x-hostlet-image-policy becomes its container's imagePolicy,
// read strictly; a bad one is an error naming the service's key.
func TestServiceImagePolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   string
		want     *manifest.ImagePolicy
		wantErrs []string
	}{
		{name: "none", policy: ""},
		{name: "semver pinned to a digest", policy: `{semver: "~1.4", pin: digest}`, want: &manifest.ImagePolicy{Semver: "~1.4", Pin: "digest"}},
		{name: "filter with prereleases", policy: `{filter: '(?P<version>\d+)-alpine', allowPrerelease: true}`,
			want: &manifest.ImagePolicy{Filter: `(?P<version>\d+)-alpine`, AllowPrerelease: true}},
		{name: "an unknown key", policy: `{semver: "^1", schedule: daily}`,
			wantErrs: []string{`apps:shop/compose.yaml: services.web.x-hostlet-image-policy: not a policy (semver, filter, allowPrerelease, pin): json: unknown field "schedule"`}},
		{name: "not a mapping", policy: `"~1.4"`,
			wantErrs: []string{`apps:shop/compose.yaml: services.web.x-hostlet-image-policy: not a policy (semver, filter, allowPrerelease, pin): json: cannot unmarshal string into Go value of type manifest.ImagePolicy`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "services:\n  web:\n    image: registry.example.org/shop/web:1.4.2\n"
			if tc.policy != "" {
				text += "    " + compose.ImagePolicyKey + ": " + tc.policy + "\n"
			}
			pods, errs := load(t, mapFiles{"compose.yaml": text}, compose.Options{})
			if !slices.Equal(errs, tc.wantErrs) {
				t.Fatalf("errors %q, want %q", errs, tc.wantErrs)
			}
			if len(pods) != 1 {
				t.Fatalf("%d pods", len(pods))
			}
			got := pods[0].Manifest.Containers[0].ImagePolicy
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Errorf("policy %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A bad policy on a service is reported at the service's key.
func TestServiceImagePolicyErrorsNameTheServiceKey(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web:\n    image: registry.example.org/shop/web:1.4.2\n    " +
		compose.ImagePolicyKey + ": {semver: \"~1.4 || banana\", pin: sha}\n"}, compose.Options{})
	if len(errs) != 0 || len(pods) != 1 {
		t.Fatalf("load: %q", errs)
	}
	set := validate.Set([]manifest.Snapshot{{Name: "apps", Manifests: pods}}, validate.Options{})
	var got []string
	for _, r := range set.Rejected {
		for _, e := range r.Errors {
			got = append(got, e.Error())
		}
	}
	want := []string{
		`apps:shop/compose.yaml: pod "shop-web": services.web.x-hostlet-image-policy.semver: "~1.4 || banana" is not a version constraint: improper constraint: " banana"`,
		`apps:shop/compose.yaml: pod "shop-web": services.web.x-hostlet-image-policy.pin: "sha" is not one of tag, digest`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
