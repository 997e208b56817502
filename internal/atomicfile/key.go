package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// KeySize is the length in bytes of the keys hostlet keeps under stateDir
// (state.key, env-hash.key).
const KeySize = 32

// ReadKey reads a key file: KeySize bytes in hex and a newline (CRLF and
// other white space around it are accepted). A file that is not there is
// an error that errors.Is(err, fs.ErrNotExist); one that holds anything
// else says so.
func ReadKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("does not hold a key of %d hex digits", 2*KeySize)
	}
	return key, nil
}

// NewKey makes a random key and writes it to path (atomically, mode 0600,
// creating path's folder with mode 0700).
func NewKey(path string) ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("make the key %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the key %s: %w", path, err)
	}
	if err := WriteFile(path, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("create the key %s: %w", path, err)
	}
	return key, nil
}
