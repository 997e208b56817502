package secrets_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/sopstest"
	"github.com/hostlet/hostlet/secrets"
)

// TestOpenRefusesWhatWouldStopDecryption: hostlet does not start with a
// key file that is not a key, an SSH key with a passphrase, or a runtime
// folder on disk, each error naming the key and the file; without keys it
// starts with no decrypter.
func TestOpenRefusesWhatWouldStopDecryption(t *testing.T) {
	helper := sopstest.Helper(t)
	run := filepath.Join(t.TempDir(), "run")
	testkit.MountTmpfs(t, run, 1<<20)
	good := sopstest.NewKey(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notAKey := write("not.key", "AGE-SECRET-KEY-1NOTAKEY\n")
	plugin := write("plugin.key", "AGE-PLUGIN-YUBIKEY-1QQQQQQ\n")
	ssh := write("id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nnot one\n-----END OPENSSH PRIVATE KEY-----\n")
	tests := []struct {
		name string
		cfg  secrets.Config
		want string
	}{
		{name: "not an age identity", cfg: secrets.Config{AgeKeyFile: notAKey}, want: "secrets.ageKeyFile " + notAKey + ": "},
		{name: "a plugin identity", cfg: secrets.Config{AgeKeyFile: plugin}, want: "secrets.ageKeyFile " + plugin + ": "},
		{name: "not an SSH key", cfg: secrets.Config{AgeKeyFile: good.File, SSHKeyFile: ssh}, want: "secrets.sshKeyFile " + ssh + ": "},
		{name: "a runtime folder on disk", cfg: secrets.Config{AgeKeyFile: good.File, RuntimeDir: filepath.Join(dir, "secrets")}, want: "not on a tmpfs or ramfs"},
		{name: "no helper", cfg: secrets.Config{AgeKeyFile: good.File, Helper: "/nonexistent/hostlet-sops"}, want: "/nonexistent/hostlet-sops"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Helper == "" {
				tc.cfg.Helper = helper
			}
			if tc.cfg.RuntimeDir == "" {
				tc.cfg.RuntimeDir = filepath.Join(run, "secrets")
			}
			d, err := secrets.Open(context.Background(), tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) || d != nil {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	d, err := secrets.Open(context.Background(), secrets.Config{AgeKeyFile: good.File, RuntimeDir: filepath.Join(run, "secrets"), Helper: helper})
	if err != nil || d == nil {
		t.Fatalf("a good key: %v", err)
	}
	if d, err := secrets.Open(context.Background(), secrets.Config{RuntimeDir: "/nonexistent"}); d != nil || err != nil {
		t.Errorf("no keys: %v %v", d, err)
	}
}
