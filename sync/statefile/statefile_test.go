package statefile_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/sync/statefile"
)

// countingValue counts its encodings.
type countingValue struct {
	N       int `json:"n"`
	encoded *int
}

func (v countingValue) MarshalJSON() ([]byte, error) {
	*v.encoded++
	return json.Marshal(map[string]int{"n": v.N})
}

// TestSnapshotIsEncodedWhenWritten: a snapshot, taken under its owner's
// lock, does not encode the value (a kept version's files can be
// megabytes, and /status waits on that lock); Write encodes it, and a
// snapshot older than the one on disk is never encoded at all.
func TestSnapshotIsEncodedWhenWritten(t *testing.T) {
	dir := t.TempDir()
	var f statefile.File
	f.Init(dir, "state.json", nil, nil)
	encoded := 0

	f.Changed()
	older := f.Snapshot(countingValue{N: 1, encoded: &encoded})
	f.Changed()
	newer := f.Snapshot(countingValue{N: 2, encoded: &encoded})
	if older == nil || newer == nil {
		t.Fatal("a changed file gave no snapshot")
	}
	if encoded != 0 {
		t.Fatalf("Snapshot encoded the value %d times; encoding belongs to Write, outside the owner's lock", encoded)
	}
	if err := f.Write(newer); err != nil {
		t.Fatal(err)
	}
	if err := f.Write(older); err != nil {
		t.Fatal(err)
	}
	if encoded != 1 {
		t.Errorf("encoded %d times, want 1 (the newer snapshot; the older one is skipped)", encoded)
	}
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"n":2}` {
		t.Errorf("file holds %s, want the newer snapshot", b)
	}
	if f.Snapshot(countingValue{encoded: &encoded}) != nil {
		t.Error("a snapshot with nothing changed since the last write")
	}
}
