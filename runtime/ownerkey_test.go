package runtime_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// TestTheOwnerKeyIsReplacedOnlyWhenItsContentIsBad: a missing key is
// made, a key file holding no key is set aside and replaced (reported),
// and one that cannot be read is reported and never replaced (a new key
// would disown every named container): hostlet runs without a key.
func TestTheOwnerKeyIsReplacedOnlyWhenItsContentIsBad(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	key, problem, err := hruntime.LoadOwnerKey(dir, log, time.Now())
	if err != nil || problem != nil || len(key) != 32 {
		t.Fatalf("first start: %x %v %v", key, problem, err)
	}
	again, _, err := hruntime.LoadOwnerKey(dir, log, time.Now())
	if err != nil || string(again) != string(key) {
		t.Fatalf("second start: %x %v, want the same key", again, err)
	}
	if string(hruntime.ReadOwnerKey(dir)) != string(key) {
		t.Error("ReadOwnerKey does not read it")
	}
	path := filepath.Join(dir, hruntime.OwnerKeyFile)
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh, problem, err := hruntime.LoadOwnerKey(dir, log, time.Now())
	if err != nil || problem == nil || string(fresh) == string(key) {
		t.Fatalf("bad content: %v %v, want a new key and a problem", problem, err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil { // unreadable as a file
		t.Fatal(err)
	}
	if key, problem, err := hruntime.LoadOwnerKey(dir, log, time.Now()); err != nil || key != nil || problem == nil || !strings.Contains(problem.Error, "unreadable") {
		t.Errorf("unreadable: key %x, problem %+v, error %v; want no key, a problem, no error", key, problem, err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		t.Errorf("the unreadable key was touched: %v %v", fi, err)
	}
}
