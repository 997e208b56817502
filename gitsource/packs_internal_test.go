package gitsource

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pack that does not end with the checksum its index records (cut
// short, or gone) is a damaged cache, whatever objects a read meets.
func TestCheckPacksFindsAPackCutShort(t *testing.T) {
	sum := bytes.Repeat([]byte{0xab}, 20)
	idx := append(append([]byte("index..."), sum...), bytes.Repeat([]byte{0xcd}, 20)...)
	pack := append([]byte("PACK and its objects"), sum...)
	tests := []struct {
		name string
		pack []byte // nil: no pack beside the index
		want string
	}{
		{"whole", pack, ""},
		{"cut short", pack[:len(pack)/2], "does not end with the checksum"},
		{"smaller than a checksum", pack[:10], "cut short"},
		{"gone", nil, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			packDir := filepath.Join(dir, "objects", "pack")
			if err := os.MkdirAll(packDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(packDir, "pack-1.idx"), idx, 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.pack != nil {
				if err := os.WriteFile(filepath.Join(packDir, "pack-1.pack"), tt.pack, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := checkPacks(dir)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("checkPacks: %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("checkPacks: %v, want one saying %q", err, tt.want)
			}
		})
	}
	if err := checkPacks(t.TempDir()); err != nil {
		t.Errorf("an empty cache: %v", err)
	}
}
