package helperexec

import (
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
