package secrets

import (
	"errors"
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

// A Kubernetes Secret's key mounted as a file (its encrypted value, a
// data value as a base64 part of it) becomes the token of its plaintext,
// the base64 part kept around it; a data value whose plaintext is not
// base64 is an error of the pod naming the volume and the file, never
// the value, found while the running version still runs.
func TestTokenizedMakesTokensOfASecretsKeysAsFiles(t *testing.T) {
	const enc = "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"
	mac := func([]byte) string { return strings.Repeat("0", 32) }
	tok := manifest.SecretToken("secret.yaml", mac(nil))
	tests := []struct {
		name, data, sealed, plain, want, err string
	}{
		{name: "a stringData value", data: enc, sealed: "secret.yaml", plain: "s3cret", want: tok},
		{name: "a data value", data: manifest.Base64Part(enc), sealed: "secret.yaml", plain: "czNjcmV0", want: manifest.Base64Part(tok)},
		{name: "binary once decoded", data: manifest.Base64Part(enc), sealed: "secret.yaml", plain: "AHgA", want: manifest.Base64Part(tok)},
		{name: "not base64", data: manifest.Base64Part(enc), sealed: "secret.yaml", plain: "s3cret!!", err: "volume v: secret db: file pw: its value in secret.yaml: a base64 value that does not decode"},
		{name: "a value of another file", data: enc, sealed: "other.yaml", plain: "s3cret", err: "file pw: an encrypted value that is not in other.yaml"},
		{name: "the whole file", data: "sops file", sealed: "secret.yaml", plain: "s3cret", want: manifest.SecretToken("secret.yaml", mac(nil))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := manifest.NewFiles("secret db", true, []manifest.FileItem{{Path: "pw", Data: []byte(tt.data), Sealed: tt.sealed}})
			m := manifest.Manifest{ID: "web", Volumes: []manifest.Volume{{Name: "v", Files: files}}, Sealed: []*manifest.Sealed{{File: "secret.yaml"}}}
			o := opened{values: map[string]string{enc: tt.plain}, valueFile: map[string]string{enc: "secret.yaml"}, files: map[string][]byte{"secret.yaml": []byte("whole")}}
			got, err := tokenized(m, o, mac)
			switch {
			case tt.err != "":
				var fe *fieldError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &fe) || fe.field != "volumes[0]" {
					t.Errorf("err %v, want one of volumes[0] holding %q", err, tt.err)
				}
				if err != nil && strings.Contains(err.Error(), tt.plain) {
					t.Errorf("err %v shows the value", err)
				}
			case err != nil:
				t.Errorf("err %v, want none", err)
			case string(got.Volumes[0].Files.Items[0].Data) != tt.want:
				t.Errorf("data %q, want %q", got.Volumes[0].Files.Items[0].Data, tt.want)
			case string(m.Volumes[0].Files.Items[0].Data) != tt.data:
				t.Errorf("the caller's manifest was changed")
			}
		})
	}
}
