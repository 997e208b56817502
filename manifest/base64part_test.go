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

// A sealed files item holds one encrypted value (a Kubernetes Secret's
// key), or a base64 part of one, only when that is all it holds; then,
// on the host, a token or a base64 part of one.
func TestSealedItemForms(t *testing.T) {
	const enc = "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"
	tok := manifest.SecretToken("secret.yaml", strings.Repeat("0", 32))
	tests := []struct {
		name, data   string
		value, token bool
		decode       bool
	}{
		{name: "a value", data: enc, value: true},
		{name: "a base64 part of a value", data: manifest.Base64Part(enc), value: true, decode: true},
		{name: "a value beside text", data: "x" + enc},
		{name: "two values", data: enc + enc},
		{name: "a whole file", data: "password: " + enc + "\nsops:\n  mac: x\n"},
		{name: "a base64 part of text", data: manifest.Base64Part("czNjcmV0")},
		{name: "a token", data: tok, token: true},
		{name: "a base64 part of a token", data: manifest.Base64Part(tok), token: true, decode: true},
		{name: "a token beside text", data: tok + "x"},
		{name: "the prefix alone", data: manifest.Base64Prefix + "}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, vd, isValue := manifest.SealedItemValue([]byte(tt.data))
			k, kd, isToken := manifest.SealedItemToken([]byte(tt.data))
			if isValue != tt.value || isToken != tt.token {
				t.Fatalf("value %v, token %v; want %v, %v", isValue, isToken, tt.value, tt.token)
			}
			if isValue && (v != enc || vd != tt.decode) || isToken && (k != tok || kd != tt.decode) {
				t.Errorf("got %q %v / %q %v", v, vd, k, kd)
			}
			if isValue && string(manifest.SealedItemData(tok, vd)) != strings.Replace(tt.data, enc, tok, 1) {
				t.Errorf("SealedItemData = %q", manifest.SealedItemData(tok, vd))
			}
		})
	}
}

// FuzzSealedItemToken: whatever a sealed item holds, a token found in it
// is one whole token, and the item's data made of it gives it back.
func FuzzSealedItemToken(f *testing.F) {
	f.Add([]byte(manifest.Base64Part(manifest.SecretToken("a", strings.Repeat("0", 32)))))
	f.Add([]byte(manifest.Base64Part("ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]")))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, decode, ok := manifest.SealedItemToken(data)
		if !ok {
			return
		}
		if got := manifest.SecretTokens(tok); len(got) != 1 || got[0] != tok {
			t.Fatalf("token %q is not one token", tok)
		}
		if string(manifest.SealedItemData(tok, decode)) != string(data) {
			t.Fatalf("SealedItemData(%q, %v) != %q", tok, decode, data)
		}
	})
}
