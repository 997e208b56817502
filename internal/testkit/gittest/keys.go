package gittest

import (
	"bytes"
	"os"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// NewKey generates an OpenPGP key (Ed25519, fast to make) for name and
// email, with its private key, for CommitSigned.
func NewKey(t testing.TB, name, email string) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "hostlet test key", email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		t.Fatalf("gittest: new OpenPGP key: %v", err)
	}
	return e
}

// ArmoredPublicKeys returns the armored public keyring of keys.
func ArmoredPublicKeys(t testing.TB, keys ...*openpgp.Entity) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatalf("gittest: armor: %v", err)
	}
	for _, k := range keys {
		if err := k.Serialize(w); err != nil {
			t.Fatalf("gittest: serialize public key: %v", err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatalf("gittest: armor: %v", err)
	}
	return b.Bytes()
}

// WriteKeyring writes the armored public keys of keys to path (a
// verify.keyringFile).
func WriteKeyring(t testing.TB, path string, keys ...*openpgp.Entity) {
	t.Helper()
	if err := os.WriteFile(path, ArmoredPublicKeys(t, keys...), 0o644); err != nil {
		t.Fatalf("gittest: write keyring: %v", err)
	}
}
