package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// shippedConfig is the config file the packages install as
// /etc/hostlet/hostlet.yaml (internal/tools/mkpackage).
const shippedConfig = "../../packaging/hostlet.yaml"

// TestShippedConfigLoads: the packages' /etc/hostlet/hostlet.yaml loads as
// hostlet run loads it, with the values the unit and docs/install.md
// count on, pruning off.
func TestShippedConfigLoads(t *testing.T) {
	c, err := Load(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	if c.StateDir != "/var/lib/hostlet" {
		t.Errorf("stateDir = %q, want /var/lib/hostlet (the unit's StateDirectory=hostlet)", c.StateDir)
	}
	if c.Listen != "127.0.0.1:10260" {
		t.Errorf("listen = %q, want loopback", c.Listen)
	}
	if len(c.Sources) != 1 || c.Sources[0].Path != "/etc/hostlet/manifests" {
		t.Errorf("sources = %+v, want the file source on /etc/hostlet/manifests the package makes", c.Sources)
	}
	// Started unchanged, next to a hostlet of the same instance (the
	// host's name), it must remove nothing (docs/install.md).
	if c.Sync.Prune {
		t.Error("sync.prune is on as shipped; it must be off until the admin sets the sources")
	}
}

// commentedKey is a commented-out line of YAML: "# key: ..." or "# - ...",
// at any indent.
var commentedKey = regexp.MustCompile(`^(\s*)# (\s*(?:[A-Za-z]+:(?:\s|$)|- ).*)$`)

// TestShippedConfigCommentsNameRealKeys: every key the shipped config
// shows in a comment is real, its example value accepted: the file with
// every such line uncommented loads too.
func TestShippedConfigCommentsNameRealKeys(t *testing.T) {
	data, err := os.ReadFile(shippedConfig)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	uncommented := 0
	for i, l := range lines {
		if m := commentedKey.FindStringSubmatch(l); m != nil {
			lines[i] = m[1] + m[2]
			uncommented++
		}
	}
	if uncommented < 20 {
		t.Fatalf("only %d commented keys found in %s; the pattern no longer matches the file", uncommented, shippedConfig)
	}
	path := filepath.Join(t.TempDir(), "hostlet.yaml")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatalf("%s with its examples uncommented: %v\n%s", shippedConfig, err, strings.Join(lines, "\n"))
	}
	if len(c.Sources) != 2 || len(c.Notify) != 1 || c.Hostname != "web-01" {
		t.Errorf("uncommented: %d sources, %d notify targets, hostname %q; want 2, 1, web-01", len(c.Sources), len(c.Notify), c.Hostname)
	}
}
