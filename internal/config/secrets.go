package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"filippo.io/age"
	"filippo.io/age/agessh"
)

// Secrets holds the host's keys for SOPS-encrypted files (docs/secrets.md).
type Secrets struct {
	// AgeKeyFile holds the host's age identities, one a line.
	AgeKeyFile string `mapstructure:"ageKeyFile"`
	// SSHKeyFile is an SSH private key (ssh-ed25519 or ssh-rsa, no
	// passphrase) used as an age identity, as sops does.
	SSHKeyFile string `mapstructure:"sshKeyFile"`
	// Recipients are the public keys of the host's identities (age1...,
	// or an SSH public key): hostlet validate and diff, which have no
	// key, say from them which files of its set the host cannot decrypt.
	Recipients []string `mapstructure:"recipients"`
	// RuntimeDir is where the decrypted files containers mount are
	// written: a folder hostlet makes with mode 0700 on a tmpfs or ramfs.
	RuntimeDir string `mapstructure:"runtimeDir"`
	// Helper is the hostlet-sops executable that decrypts; "" finds it
	// beside the hostlet executable, else on PATH.
	Helper string `mapstructure:"helper"`
}

// maxRecipients bounds secrets.recipients.
const maxRecipients = 64

// check checks the secrets block.
func (s *Secrets) check(bad badFunc) {
	for _, k := range []struct{ key, path string }{{"secrets.ageKeyFile", s.AgeKeyFile}, {"secrets.sshKeyFile", s.SSHKeyFile}} {
		if k.path != "" && !filepath.IsAbs(k.path) {
			bad(k.key, "%q is not an absolute path", truncateKey(k.path))
		}
	}
	if !filepath.IsAbs(s.RuntimeDir) || filepath.Clean(s.RuntimeDir) != s.RuntimeDir {
		bad("secrets.runtimeDir", "%q is not a clean absolute path", truncateKey(s.RuntimeDir))
	}
	if len(s.Recipients) > maxRecipients {
		bad("secrets.recipients", "%d recipients, at most %d", len(s.Recipients), maxRecipients)
		return
	}
	for i, r := range s.Recipients {
		key := fmt.Sprintf("secrets.recipients[%d]", i)
		switch {
		case strings.Contains(r, "AGE-SECRET-KEY") || strings.Contains(r, "PRIVATE KEY"):
			// Never quoted: a private key pasted here is to be moved.
			bad(key, "is a private key: it belongs in the file secrets.ageKeyFile or secrets.sshKeyFile names (mode 0600), and its public key here")
		case !validRecipient(r):
			// Not quoted either: whatever it is, it is no public key.
			bad(key, "is not an age recipient (age1...) or an SSH public key (ssh-ed25519 ..., ssh-rsa ...)")
		}
	}
}

// validRecipient parses r as age does: an age1 key (X25519 or
// post-quantum hybrid) or an SSH public key.
func validRecipient(r string) bool {
	var err error
	switch {
	case strings.HasPrefix(r, "ssh-"):
		_, err = agessh.ParseRecipient(r)
	case strings.HasPrefix(r, "age1pq1"):
		_, err = age.ParseHybridRecipient(r)
	default:
		_, err = age.ParseX25519Recipient(r)
	}
	return err == nil
}
