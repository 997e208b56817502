package agent_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/agent"
	"github.com/hostlet/hostlet/internal/config"
)

// TestRunRefusesCredentialsOthersCanRead: hostlet run stops at once, before
// it reaches the engine, when its token file or a key under stateDir is
// readable by every user, naming the file; the systemd unit then keeps
// restarting it until the mode is fixed.
func TestRunRefusesCredentialsOthersCanRead(t *testing.T) {
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	token := filepath.Join(dir, "token")
	key := filepath.Join(stateDir, "state.key")
	for _, p := range []string{token, key} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// No engine listens here: an error about it would mean the check ran
	// too late.
	cfgFile := filepath.Join(dir, "hostlet.yaml")
	yaml := "instance: test-private\nstateDir: " + stateDir + "\ntokenFile: " + token +
		"\ndocker: {host: unix://" + filepath.Join(dir, "no-engine.sock") + "}\n"
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct{ name, file, want string }{
		{name: "token", file: token, want: "tokenFile " + token + " has mode 0644"},
		{name: "state key", file: key, want: key + " has mode 0644"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.Chmod(tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(tc.file, 0o600)
			err := agent.Run(context.Background(), cfg, agent.Options{}, log)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v, want the refusal %q", err, tc.want)
			}
		})
	}
}

// TestRunRefusesSecretKeysItsGroupCanRead: the keys of SOPS files are
// held to more than other credentials (0600 or stricter, the group kept
// out too), and hostlet run stops before the engine, naming the key file.
func TestRunRefusesSecretKeysItsGroupCanRead(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "age.key")
	if err := os.WriteFile(key, []byte("AGE-SECRET-KEY-1X\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "hostlet.yaml")
	yaml := "instance: test-secret-key\nstateDir: " + filepath.Join(dir, "state") +
		"\ndocker: {host: unix://" + filepath.Join(dir, "no-engine.sock") + "}\nsecrets: {ageKeyFile: " + key + "}\n"
	if err := os.WriteFile(cfgFile, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	err = agent.Run(context.Background(), cfg, agent.Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if want := "refusing to start: secrets.ageKeyFile " + key + ": has mode 0640"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Run: %v, want the refusal %q", err, want)
	}
}
