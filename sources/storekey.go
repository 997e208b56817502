package sources

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/seal"
)

// StateKeyFile is the file under stateDir holding the key that seals the
// saved last good sets (stateDir/sources/NAME.json): 32 random bytes in
// hex, mode 0600.
const StateKeyFile = "state.key"

// sealMagic starts every sealed saved set; what follows is a 12-byte nonce
// and the AES-256-GCM ciphertext of the set's JSON, its source's name as
// additional data (a set cannot be passed off as another source's).
const sealMagic = seal.Magic

// sealer seals saved sets, so that the env values they hold (the sets are
// the manifests as delivered) are not plain text on disk: copies of
// stateDir, backups and greps of it show none. The key sits beside the
// sets, so this does not protect against root on the host, which Docker's
// own container configs do not either.
type sealer struct {
	s *seal.Sealer
}

// loadSealer returns the sealer of the key in stateDir/state.key, creating
// the key on first use. A key file that cannot be read or holds no key is
// moved aside and reported like any damaged state file, and a new key made:
// the sets sealed with the old one then fail to open and count as damaged
// (their sources count as not delivered until they deliver again).
func loadSealer(stateDir string, problems *atomicfile.Problems, now time.Time, log *slog.Logger) (*sealer, error) {
	path := filepath.Join(stateDir, StateKeyFile)
	key, err := atomicfile.ReadKey(path)
	if errors.Is(err, fs.ErrNotExist) {
		if sealedSetsIn(stateDir) {
			// Lost, not new: say so, rather than blame only the sets.
			p := atomicfile.Problem{File: StateKeyFile, Op: atomicfile.OpRead, Error: "missing while saved sets sealed with it exist: they cannot be opened", Since: now.UTC()}
			problems.Report(p)
			log.Warn("state key missing; a new one is made (saved sets sealed with the old one cannot be read)", "file", p.File)
		}
	} else if err != nil {
		p := atomicfile.Damaged(stateDir, path, err, now)
		problems.Report(p)
		log.Warn("state key unusable; moved aside and replaced by a new key (saved sets sealed with it cannot be read)", "file", p.File, "keptAs", p.KeptAs, "error", p.Error)
	}
	if key == nil {
		if key, err = atomicfile.NewKey(path); err != nil {
			return nil, fmt.Errorf("state key: %w", err)
		}
	}
	return newSealer(key)
}

func newSealer(key []byte) (*sealer, error) {
	s, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	return &sealer{s: s}, nil
}

// seal returns the sealed form of a saved set of source name.
func (s *sealer) seal(plain []byte, name string) ([]byte, error) {
	b, err := s.s.Seal(plain, name)
	if err != nil {
		return nil, fmt.Errorf("seal the saved set of source %s: %w", name, err)
	}
	return b, nil
}

// open returns the JSON of a saved set of source name. legacy is true for
// a set saved in plain text by an earlier release: it is taken as it is
// and sealed when saved next.
func (s *sealer) open(b []byte, name string) (plain []byte, legacy bool, err error) {
	plain, err = s.s.Open(b, name)
	if errors.Is(err, seal.ErrNotSealed) {
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' {
			return b, true, nil
		}
		return nil, false, errors.New("neither a sealed saved set nor JSON")
	}
	if err != nil {
		return nil, false, fmt.Errorf("saved set: %w", err)
	}
	return plain, false, nil
}

// sealedSetsIn reports whether stateDir/sources holds a sealed saved set.
func sealedSetsIn(stateDir string) bool {
	paths, _ := filepath.Glob(filepath.Join(stateDir, "sources", "*.json"))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		head := make([]byte, len(sealMagic))
		n, _ := f.Read(head)
		_ = f.Close()
		if string(head[:n]) == sealMagic {
			return true
		}
	}
	return false
}
