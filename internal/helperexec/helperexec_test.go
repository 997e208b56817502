package helperexec

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindLooksBesideTheExecutableThenOnPath(t *testing.T) {
	if got, err := Find("hostlet-nothing", "/opt/x"); err != nil || got != "/opt/x" {
		t.Errorf("explicit: %q %v", got, err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "hostlet-fake-helper")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got, err := Find("hostlet-fake-helper", ""); err != nil || got != p {
		t.Errorf("on PATH: %q %v", got, err)
	}
	_, err := Find("hostlet-no-such-helper", "")
	if err == nil || !strings.Contains(err.Error(), "hostlet-no-such-helper not found (looked [beside ") || !strings.Contains(err.Error(), "on PATH]") {
		t.Errorf("missing: %v", err)
	}
}

// TestFindTrustedRefusesWhatOthersMayReplace: a helper handed secrets is
// never taken from PATH, nor from a file or folder others may write.
func TestFindTrustedRefusesWhatOthersMayReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hostlet-fake-helper")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if _, err := FindTrusted("hostlet-fake-helper", ""); err == nil || !strings.Contains(err.Error(), "not found (looked [beside ") {
		t.Errorf("on PATH only: %v", err)
	}
	if got, err := FindTrusted("hostlet-fake-helper", p); err != nil || got != p {
		t.Errorf("named: %q %v", got, err)
	}
	if err := os.Chmod(p, 0o757); err != nil {
		t.Fatal(err)
	}
	if _, err := FindTrusted("hostlet-fake-helper", p); err == nil || !strings.Contains(err.Error(), "has mode 0757") {
		t.Errorf("a helper others may write: %v", err)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := FindTrusted("hostlet-fake-helper", p); err == nil || !strings.Contains(err.Error(), "has mode 0777") {
		t.Errorf("in a folder others may write: %v", err)
	}
}

// TestBufferKeepsItsBound: past Max, an answer's buffer fails the write
// (the helper then ends) and a message buffer drops the rest; both keep
// Max bytes, say more came, and io.Copy cannot get past them.
func TestBufferKeepsItsBound(t *testing.T) {
	for _, stop := range []bool{true, false} {
		b := &Buffer{Max: 4, Stop: stop}
		_, err := io.Copy(b, strings.NewReader("0123456789"))
		if string(b.Bytes()) != "0123" || b.Len() != 4 || !b.Over || (err != nil) != stop {
			t.Errorf("stop %v: %q over %v err %v", stop, b.Bytes(), b.Over, err)
		}
	}
}
