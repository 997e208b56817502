package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
)

// OwnerKeyFile is the file under stateDir holding the host's owner key
// (see Owner): 32 random bytes, hex-encoded, mode 0600.
const OwnerKeyFile = "owner.key"

// LoadOwnerKey returns the owner key in stateDir/owner.key, creating it on
// first use. A key file that does not hold a key is moved aside
// (owner.key.corrupt-<UTC>), replaced by a new key and returned as the
// problem to report: the containers signed with the old key are no longer
// proven hostlet's, and their names are conflicts until they are removed
// by hand. A key file that cannot be read (permissions, I/O) is left as it
// is and reported, and no key is returned: hostlet runs without one (a
// new key would disown them for good) until a restart can read it.
func LoadOwnerKey(stateDir string, log *slog.Logger, now time.Time) ([]byte, *atomicfile.Problem, error) {
	path := filepath.Join(stateDir, OwnerKeyFile)
	key, err := atomicfile.ReadKey(path)
	if err == nil {
		return key, nil, nil
	}
	var damaged *atomicfile.Problem
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) && !errors.Is(err, fs.ErrNotExist) {
		// Unreadable (permissions, I/O): a new key would disown every
		// named container for good. hostlet runs without one (no named
		// container is made or proven) and reads it again at its next
		// start; the file is left as it is.
		log.Warn("owner key unreadable; running without it (containers under the names manifests chose are left alone until it can be read)", "file", path, "error", err)
		return nil, &atomicfile.Problem{File: OwnerKeyFile, Op: atomicfile.OpRead, Since: now.UTC(),
			Error: "unreadable: containers under chosen names are left alone and none is made until a restart reads it: " + err.Error()}, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		p := atomicfile.Damaged(stateDir, path, err, now)
		log.Warn("owner key unusable; moved aside and replaced by a new key (containers under the names manifests chose are no longer proven hostlet's)",
			"file", p.File, "keptAs", p.KeptAs, "error", p.Error)
		damaged = &p
	}
	if key, err = atomicfile.NewKey(path); err != nil {
		return nil, damaged, fmt.Errorf("owner key: %w", err)
	}
	return key, damaged, nil
}

// ReadOwnerKey returns the owner key in stateDir, never creating or
// changing it, for the commands that look at the host's containers
// (`hostlet volumes`, `hostlet diff --against live`); nil when it cannot
// be read: the containers under chosen names are then not seen.
func ReadOwnerKey(stateDir string) []byte {
	if stateDir == "" {
		return nil
	}
	key, err := atomicfile.ReadKey(filepath.Join(stateDir, OwnerKeyFile))
	if err != nil {
		return nil
	}
	return key
}
