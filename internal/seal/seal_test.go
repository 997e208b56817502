package seal_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/hostlet/hostlet/internal/seal"
)

func newSealer(t testing.TB, b byte) *seal.Sealer {
	t.Helper()
	s, err := seal.New(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOpen(t *testing.T) {
	s := newSealer(t, 1)
	sealed, err := s.Seal([]byte(`{"pods":{}}`), "rollouts.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		sealer  *seal.Sealer
		data    []byte
		file    string
		wantErr error // nil: opens; ErrNotSealed; errAny: another error
	}{
		{name: "opens", sealer: s, data: sealed, file: "rollouts.json"},
		{name: "another file's", sealer: s, data: sealed, file: "holds.json", wantErr: errAny},
		{name: "another key", sealer: newSealer(t, 2), data: sealed, file: "rollouts.json", wantErr: errAny},
		{name: "cut short", sealer: s, data: sealed[:len(seal.Magic)+5], file: "rollouts.json", wantErr: errAny},
		{name: "a byte changed", sealer: s, data: append(append([]byte{}, sealed[:len(sealed)-1]...), sealed[len(sealed)-1]^1), file: "rollouts.json", wantErr: errAny},
		{name: "plain JSON", sealer: s, data: []byte(`{"pods":{}}`), file: "rollouts.json", wantErr: seal.ErrNotSealed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, err := tt.sealer.Open(tt.data, tt.file)
			switch {
			case tt.wantErr == nil && (err != nil || string(plain) != `{"pods":{}}`):
				t.Fatalf("Open: %q, %v; want the content", plain, err)
			case tt.wantErr == errAny && (err == nil || errors.Is(err, seal.ErrNotSealed)):
				t.Fatalf("Open: %v, want a failure to open", err)
			case tt.wantErr == seal.ErrNotSealed && !errors.Is(err, seal.ErrNotSealed):
				t.Fatalf("Open: %v, want ErrNotSealed", err)
			}
		})
	}
}

var errAny = errors.New("any error")

// FuzzOpen: any input opens or fails; it never panics, and what opens is
// only what was sealed.
func FuzzOpen(f *testing.F) {
	s := newSealer(f, 1)
	sealed, _ := s.Seal([]byte("content"), "f")
	f.Add(sealed)
	f.Add([]byte(seal.Magic))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		plain, err := s.Open(b, "f")
		if err == nil && string(plain) != "content" {
			t.Fatalf("opened %q from input that was not sealed here", plain)
		}
	})
}
