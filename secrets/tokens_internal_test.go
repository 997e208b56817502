package secrets

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// What a container will get from an encrypted value is checked when the
// value becomes a token, while the running version still runs: a base64
// part (a Kubernetes Secret's data) that does not decode, or a NUL byte
// after decoding, is an error of the manifest, which never shows the
// value.
func TestTokenizedChecksWhatTheContainerGets(t *testing.T) {
	const enc = "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"
	tests := []struct {
		name, value, plain, want string
	}{
		{"a value", "x-" + enc, "s3cret", ""},
		{"a base64 part", manifest.Base64Part(enc), "czNjcmV0", ""},
		{"not base64", manifest.Base64Part(enc), "s3cret!!", "a base64 part that is not base64 text"},
		{"not whole base64", manifest.Base64Part(enc), "czNjcmV", "a base64 value that does not decode"},
		{"NUL once decoded", manifest.Base64Part(enc), "AHgA", "holds a NUL byte"},
		{"NUL", enc, "a\x00b", "holds a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := manifest.Manifest{ID: "web", Containers: []manifest.Container{{Name: "app", Env: []manifest.EnvVar{{Name: "PW", Value: tt.value}}}}}
			o := opened{values: map[string]string{enc: tt.plain}, valueFile: map[string]string{enc: "secret.yaml"}, files: map[string][]byte{}}
			_, err := tokenized(m, o, func([]byte) string { return strings.Repeat("0", 32) })
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("err %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("err %v, want one holding %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), tt.plain):
				t.Errorf("err %v shows the value", err)
			}
		})
	}
}
