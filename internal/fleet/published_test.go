package fleet

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

func gz(t testing.TB, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestPublished(t *testing.T) {
	p := Published{Release: "3f2a9c1e4b5d60718293a4b5c6d7e8f901234567", Source: "fleet", Files: 1, Manifests: []manifest.Sourced{{
		Origin:   manifest.Origin{Source: "fleet", File: "hosts/web-1/web.yaml"},
		Manifest: manifest.Manifest{Version: "v1beta1", ID: "web", Containers: []manifest.Container{{Name: "app", Image: "example.org/web:1"}}},
	}}}
	b, err := EncodePublished(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePublished(b, "fleet")
	if err != nil || got.Release != p.Release || len(got.Manifests) != 1 || got.Manifests[0].Manifest.ID != "web" || got.Manifests[0].Origin.File != "hosts/web-1/web.yaml" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	tests := []struct {
		name, source, wantErr string
		data                  []byte
	}{
		{name: "another source's", data: b, source: "other", wantErr: `for source "fleet", not "other"`},
		{name: "not gzip", data: []byte(`{"format":"hostlet-published/v1"}`), source: "fleet", wantErr: "not a set hostlet publish wrote"},
		{name: "unknown field", data: gz(t, `{"format":"hostlet-published/v1","release":"r","source":"fleet","extra":1}`), source: "fleet", wantErr: "unknown field"},
		{name: "another format", data: gz(t, `{"format":"v0","release":"r","source":"fleet"}`), source: "fleet", wantErr: "format"},
		{name: "no release", data: gz(t, `{"format":"hostlet-published/v1","source":"fleet"}`), source: "fleet", wantErr: "no release"},
		{name: "a bomb", data: gz(t, `{"format":"hostlet-published/v1","release":"`+strings.Repeat("r", int(manifest.MaxSize))+`"}`), source: "fleet", wantErr: "over"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodePublished(tt.data, tt.source); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("DecodePublished: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	if k := DesiredKey("/hostlet", "web-1", "fleet"); k != "/hostlet/desired/web-1/fleet" {
		t.Errorf("DesiredKey: %q", k)
	}
}

// FuzzDecodePublished: any value decodes or fails, never panics.
func FuzzDecodePublished(f *testing.F) {
	b, _ := EncodePublished(Published{Release: "r", Source: "fleet"})
	f.Add(b)
	f.Add(gz(f, `{"format":"hostlet-published/v1","release":"r","source":"fleet","manifests":[{}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePublished(data, "fleet")
		if err == nil && (p.Source != "fleet" || p.Release == "") {
			t.Fatalf("decoded %+v", p)
		}
	})
}
