package config

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestSecretsRecipientsNeverQuoteAKey: a public key of each kind is
// taken; a private key pasted into secrets.recipients, or anything else,
// is refused by index without its text.
func TestSecretsRecipientsNeverQuoteAKey(t *testing.T) {
	const (
		age1    = "age1ha402c2gh8xm7utdpmh49rfhmcdztn0s0s57ylqgszkahzxjcexq0jqnp3"
		private = "AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSQ3PLRH9"
	)
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sshKey := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub)))
	dir := t.TempDir()
	write := func(recipients string) (*Config, error) {
		p := filepath.Join(dir, "hostlet.yaml")
		if err := os.WriteFile(p, []byte("stateDir: "+dir+"\nsecrets:\n  recipients: "+recipients+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return Load(p)
	}
	if _, err := write("[" + age1 + ", \"" + sshKey + "\"]"); err != nil {
		t.Fatalf("public keys: %v", err)
	}
	for _, tc := range []struct{ value, want string }{
		{private, `key "secrets.recipients[0]": is a private key`},
		{"\"-----BEGIN OPENSSH PRIVATE KEY-----\\nb3BlbnNzaC1rZXktdjEAAAAA\\n\"", `key "secrets.recipients[0]": is a private key`},
		{"age1notakey", `key "secrets.recipients[0]": is not an age recipient`},
	} {
		_, err := write("[" + tc.value + "]")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.value, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "QYQSZQGP") || strings.Contains(err.Error(), "b3BlbnNz") || strings.Contains(err.Error(), "notakey")) {
			t.Errorf("the value is quoted: %v", err)
		}
	}
}
