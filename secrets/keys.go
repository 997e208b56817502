package secrets

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"syscall"
)

// maxKeyFile bounds a key file: an age identity file of a few hundred
// keys, an RSA key of 16 kbit.
const maxKeyFile = 256 << 10

// Keys are the host's identities. They are never shown: formatted or
// logged, a Keys value is "[keys]".
type Keys struct {
	identities []string
	sshKeys    [][]byte
}

// Empty reports whether k holds no identity.
func (k Keys) Empty() bool { return len(k.identities) == 0 && len(k.sshKeys) == 0 }

// String hides the keys.
func (Keys) String() string { return "[keys]" }

// GoString hides the keys.
func (Keys) GoString() string { return "[keys]" }

// LogValue hides the keys.
func (Keys) LogValue() slog.Value { return slog.StringValue("[keys]") }

// LoadKeys reads the age identity file and the SSH key file (either may be
// ""), each checked by CheckKeyFile first.
func LoadKeys(ageKeyFile, sshKeyFile string) (Keys, error) {
	var k Keys
	if ageKeyFile != "" {
		b, err := readKeyFile(ageKeyFile)
		if err != nil {
			return Keys{}, fmt.Errorf("secrets.ageKeyFile %s: %w", ageKeyFile, err)
		}
		k.identities = append(k.identities, string(b))
	}
	if sshKeyFile != "" {
		b, err := readKeyFile(sshKeyFile)
		if err != nil {
			return Keys{}, fmt.Errorf("secrets.sshKeyFile %s: %w", sshKeyFile, err)
		}
		k.sshKeys = append(k.sshKeys, b)
	}
	return k, nil
}

// readKeyFile reads a key file that CheckKeyFile accepts.
func readKeyFile(path string) ([]byte, error) {
	// Without blocking: a FIFO put in the key's place is refused, not
	// waited on.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkKeyInfo(fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("over %d KiB: not a key file", maxKeyFile>>10)
	}
	return b, nil
}

// ErrKeyFileOpen is the error of a key file others may read or that
// another user owns.
var ErrKeyFileOpen = errors.New("a key file must be owned by hostlet's user and have mode 0600 or stricter")

// CheckKeyFile refuses a key file that does not exist, is not a regular
// file, is owned by another user than the one hostlet runs as, or that
// anyone but its owner may read or write (mode 0600 or stricter).
func CheckKeyFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return checkKeyInfo(fi)
}

func checkKeyInfo(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("has mode %04o: %w (chmod 600)", perm, ErrKeyFileOpen)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("is owned by uid %d, hostlet runs as uid %d: %w", st.Uid, os.Geteuid(), ErrKeyFileOpen)
	}
	return nil
}

// IsSSHKeyFile reports whether the file at path begins as an OpenSSH or
// PEM private key (else it is taken for an age identity file).
func IsSSHKeyFile(path string) bool {
	b, err := readKeyFile(path)
	return err == nil && bytes.HasPrefix(bytes.TrimSpace(b), []byte("-----BEGIN "))
}
