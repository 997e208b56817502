package manifest_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

func TestDecodeBase64Parts(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{in: "plain", want: "plain"},
		{in: manifest.Base64Part("czNjcmV0"), want: "s3cret"},
		{in: "postgres://u:" + manifest.Base64Part("czNjcmV0") + "@db", want: "postgres://u:s3cret@db"},
		{in: manifest.Base64Part("czNj\ncmV0"), want: "s3cret"},
		{in: manifest.Base64Part("not base64!"), err: "not base64 text"},
		{in: manifest.Base64Part("czNjcmV"), err: "does not decode"},
		{in: manifest.Base64Prefix + "czNjcmV0", err: "not base64 text"},
	}
	for _, tt := range tests {
		got, err := manifest.DecodeBase64Parts(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%q: %q %v, want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzDecodeBase64Parts: any value decodes or fails, never panics, and
// the error never quotes the value.
func FuzzDecodeBase64Parts(f *testing.F) {
	for _, s := range []string{"plain", manifest.Base64Part("czNjcmV0"), manifest.Base64Prefix + "x", "a{{hostlet-base64:}}b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := manifest.DecodeBase64Parts(s); err != nil && len(s) > 40 && strings.Contains(err.Error(), s) {
			t.Fatalf("the error quotes the value: %v", err)
		}
	})
}
