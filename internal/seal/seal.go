// Package seal seals hostlet's state files that hold secrets (env values,
// files' contents) with AES-256-GCM under a key of the host's stateDir,
// the file's name as additional data (a file cannot be passed off as
// another). The key sits beside the files, so this protects copies of
// stateDir, backups and greps of it, not the host against its root; it
// also makes a file that hostlet did not write fail to open.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// Magic starts every sealed file; what follows is a 12-byte nonce and the
// ciphertext.
const Magic = "hostlet-sealed-v1\n"

// ErrNotSealed is Open's error for content that does not start with Magic.
var ErrNotSealed = errors.New("not a sealed file")

// Sealer seals and opens files with one key.
type Sealer struct {
	aead cipher.AEAD
}

// New returns the sealer of a 32-byte key.
func New(key []byte) (*Sealer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal key: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns the sealed form of plain, the content of the file name.
func (s *Sealer) Seal(plain []byte, name string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal %s: %w", name, err)
	}
	out := append([]byte(Magic), nonce...)
	return s.aead.Seal(out, nonce, plain, []byte(name)), nil
}

// Open returns the content of the sealed file name: ErrNotSealed when b
// is not sealed, another error when it does not open with this key (cut
// short, damaged, another file's, sealed with another key).
func (s *Sealer) Open(b []byte, name string) ([]byte, error) {
	rest, ok := bytes.CutPrefix(b, []byte(Magic))
	if !ok {
		return nil, ErrNotSealed
	}
	n := s.aead.NonceSize()
	if len(rest) < n+s.aead.Overhead() {
		return nil, errors.New("sealed file cut short")
	}
	plain, err := s.aead.Open(nil, rest[:n], rest[n:], []byte(name))
	if err != nil {
		return nil, errors.New("sealed file does not open with this host's key (damaged, another file's, or sealed with another key)")
	}
	return plain, nil
}
