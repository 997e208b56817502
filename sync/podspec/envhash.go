package podspec

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/manifest"
)

// EnvKeyFile is the file under stateDir holding the host's env hash key:
// 32 random bytes, hex-encoded, mode 0600.
const EnvKeyFile = "env-hash.key"

// envHashPrefix starts every keyed env hash: "hmac-sha256:<key id>:<mac>".
const envHashPrefix = "hmac-sha256:"

// envKeySize is the key's length in bytes; envMACHex the hex digits of the
// MAC shown (128 bits); envKeyIDHex those of the key id.
const (
	envKeySize  = 32
	envMACHex   = 32
	envKeyIDHex = 8
)

// hiddenEnv is what a nil EnvHasher shows for every value: nothing about it.
const hiddenEnv = "hidden"

// EnvHasher hides env values behind an HMAC-SHA256 keyed with a per-host
// secret, so that what /status, /pods, the io.hostlet.spec label and
// `hostlet diff` show cannot be checked against guessed values by whoever
// reads it. Each hash names the key it was made with ("hmac-sha256:<key
// id>:<128-bit MAC>"): two hashes are compared only when made with the same
// key (see Comparable). A nil *EnvHasher hides values entirely.
type EnvHasher struct {
	key []byte
	id  string
}

// NewEnvHasher returns the hasher for key.
func NewEnvHasher(key []byte) *EnvHasher {
	k := append([]byte(nil), key...)
	m := hmac.New(sha256.New, k)
	m.Write([]byte("hostlet env hash key id"))
	return &EnvHasher{key: k, id: hex.EncodeToString(m.Sum(nil))[:envKeyIDHex]}
}

// StateSealer is the sealer of the syncer's state files that hold
// secrets (rollouts.json), its key derived from the host's env hash key.
func (h *EnvHasher) StateSealer() (*seal.Sealer, error) {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("hostlet state file seal"))
	return seal.New(m.Sum(nil))
}

// RandomEnvHasher returns a hasher with a fresh random key, for a process
// that cannot read the host's key (`hostlet diff` and `validate` off the
// host): its hashes compare with nothing but its own.
func RandomEnvHasher() *EnvHasher {
	return NewEnvHasher(randomKey())
}

func randomKey() []byte {
	b := make([]byte, envKeySize)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// Hash returns the keyed hash of an env variable's value.
func (h *EnvHasher) Hash(name, value string) string {
	if h == nil {
		return hiddenEnv
	}
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte(name))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return envHashPrefix + h.id + ":" + hex.EncodeToString(m.Sum(nil))[:envMACHex]
}

// SecretMAC is the keyed hash of a decrypted secret (32 hex digits, 128
// bits) that the token standing for it in a manifest carries
// (manifest.SecretToken): it changes with the plaintext and the key only.
// Without a hasher it is a hash of nothing ("0"s): no secret is told by
// it, and no two secrets are told apart.
func (h *EnvHasher) SecretMAC(plain []byte) string {
	if h == nil {
		return strings.Repeat("0", envMACHex)
	}
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("secret\x00"))
	m.Write(plain)
	return hex.EncodeToString(m.Sum(nil))[:envMACHex]
}

// FilesName is the name of the materialised copy of files with digest:
// a keyed hash of it (64 hex digits), so that the name, the
// io.hostlet.files label and a mount's source tell nothing about the
// content. Without a hasher it is the digest itself.
func (h *EnvHasher) FilesName(digest string) string {
	if h == nil {
		return digest
	}
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("files\x00"))
	m.Write([]byte(digest))
	return hex.EncodeToString(m.Sum(nil))
}

// CopyName is the name of the materialised copy of files volume f of
// pod m: FilesName of its digest, or, for a pod with an fsGroup, of its
// digest and the group, so that the copy, group-owned by it, is shared
// only by pods of the same group.
func (h *EnvHasher) CopyName(m manifest.Manifest, f *manifest.Files) string {
	if m.FSGroup == nil {
		return h.FilesName(f.Digest())
	}
	return h.FilesName(f.Digest() + "\x00fsGroup=" + strconv.FormatInt(*m.FSGroup, 10))
}

// KeyID names the key (not secret): the id each of its hashes carries.
func (h *EnvHasher) KeyID() string {
	if h == nil {
		return ""
	}
	return h.id
}

// Comparable reports whether two recorded env hashes can be compared:
// both keyed hashes made with the same key. Values hashed by an older
// hostlet (unkeyed "sha256:…"), with another host's key, or hidden, tell
// nothing about each other.
func Comparable(a, b string) bool {
	ka, ok := envKeyID(a)
	if !ok {
		return false
	}
	kb, ok := envKeyID(b)
	return ok && ka == kb
}

func envKeyID(h string) (string, bool) {
	rest, ok := strings.CutPrefix(h, envHashPrefix)
	if !ok {
		return "", false
	}
	id, mac, ok := strings.Cut(rest, ":")
	return id, ok && id != "" && mac != ""
}

// LoadEnvHasher returns the hasher of the host's key in
// stateDir/env-hash.key, creating the key (atomically, mode 0600) on first
// use. A key file that cannot be read or does not hold a key is moved
// aside (env-hash.key.corrupt-<UTC>, see atomicfile.Damaged), replaced by
// a new key and reported with a warning (and, in a Syncer, in its state
// file problems): env values hashed before then no longer compare (`diff`
// and recreate reasons say so), and nothing is recreated for it, as the
// spec hash does not depend on the key.
func LoadEnvHasher(stateDir string, log *slog.Logger) (*EnvHasher, error) {
	h, _, err := LoadEnvHasherAt(stateDir, log, time.Now())
	return h, err
}

// LoadEnvHasherAt is LoadEnvHasher, also returning the problem of a damaged
// key file (nil when there was none).
func LoadEnvHasherAt(stateDir string, log *slog.Logger, now time.Time) (*EnvHasher, *atomicfile.Problem, error) {
	path := filepath.Join(stateDir, EnvKeyFile)
	key, err := atomicfile.ReadKey(path)
	if err == nil {
		return NewEnvHasher(key), nil, nil
	}
	var damaged *atomicfile.Problem
	if !errors.Is(err, fs.ErrNotExist) {
		p := atomicfile.Damaged(stateDir, path, err, now)
		log.Warn("env hash key unusable; moved aside and replaced by a new key (env hashes made before no longer compare)",
			"file", p.File, "keptAs", p.KeptAs, "error", p.Error)
		damaged = &p
	}
	if key, err = atomicfile.NewKey(path); err != nil {
		return nil, damaged, fmt.Errorf("env hash key: %w", err)
	}
	return NewEnvHasher(key), damaged, nil
}

// ReadEnvHasher returns the hasher of the key in stateDir, never creating
// or changing it: for `hostlet diff` on the host, whose reasons then
// compare env values with what the running hostlet recorded.
func ReadEnvHasher(stateDir string) (*EnvHasher, error) {
	path := filepath.Join(stateDir, EnvKeyFile)
	key, err := atomicfile.ReadKey(path)
	if err != nil {
		return nil, fmt.Errorf("env hash key %s: %w", path, err)
	}
	return NewEnvHasher(key), nil
}
