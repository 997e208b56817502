package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// TestFSGroupIsAGroupIDWithAKnownPolicy: fsGroup is a group id in
// Kubernetes' range (0 included), its change policy one of Kubernetes'
// two, and a policy without fsGroup, which would change nothing, is
// refused; each error names the file, the pod and the field.
func TestFSGroupIsAGroupIDWithAKnownPolicy(t *testing.T) {
	tests := []struct {
		name   string
		fields string
		want   string // "" accepted; else in the error
	}{
		{name: "a group", fields: "fsGroup: 2000\n"},
		{name: "group 0", fields: "fsGroup: 0\n"},
		{name: "the largest group", fields: "fsGroup: 2147483647\n"},
		{name: "OnRootMismatch", fields: "fsGroup: 2000\nfsGroupChangePolicy: OnRootMismatch\n"},
		{name: "Always", fields: "fsGroup: 2000\nfsGroupChangePolicy: Always\n"},
		{name: "negative", fields: "fsGroup: -1\n", want: "fsGroup: -1 is not a group id in 0..2147483647"},
		{name: "over the range", fields: "fsGroup: 2147483648\n", want: "fsGroup: 2147483648 is not a group id in 0..2147483647"},
		{name: "unknown policy", fields: "fsGroup: 2000\nfsGroupChangePolicy: Never\n", want: `fsGroupChangePolicy: "Never" is not one of OnRootMismatch, Always`},
		{name: "policy in lower case", fields: "fsGroup: 2000\nfsGroupChangePolicy: always\n", want: `fsGroupChangePolicy: "always" is not one of`},
		{name: "policy without fsGroup", fields: "fsGroupChangePolicy: Always\n", want: "fsGroupChangePolicy: needs fsGroup"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "version: v1beta1\nid: web\n" + tt.fields + "containers:\n  - name: app\n    image: example.org/app:1\n"
			ms, err := manifest.Decode([]byte(y), manifest.Origin{Source: "local", File: "web.yaml"})
			if err != nil || len(ms) != 1 {
				t.Fatalf("decode: %v (%d manifests)", err, len(ms))
			}
			err = validate.Manifest(ms[0], validate.Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tt.want)
			}
			for _, want := range []string{"web.yaml", `pod "web"`, tt.want} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
