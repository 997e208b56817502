package sources

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources/desired"
)

// savedSet is one source's last good set as it is saved under
// stateDir/sources/NAME.json (sealed, see seal.go): the set, and the last
// accepted version of every id it declares.
type savedSet struct {
	Name        string                   `json:"name"`
	Type        string                   `json:"type"`
	Revision    string                   `json:"revision"`
	LastSuccess time.Time                `json:"lastSuccess"`
	Manifests   []manifest.Sourced       `json:"manifests"`
	Good        map[string]desired.Entry `json:"good"`
	// Contexts holds each build context once, by its digest: the
	// manifests' builds refer to it (see shareContexts), so pods built
	// from one folder, and a manifest in Manifests and Good, do not write
	// it again.
	Contexts map[string]*manifest.Files `json:"contexts,omitempty"`
}

// contextRef marks a build's Files in a saved set as a reference to
// savedSet.Contexts: its Hash is contextRef + the digest.
const contextRef = "context-digest:"

// shareContexts returns a copy of set whose builds' contexts are in
// Contexts, once each, the manifests referring to them (set is not
// changed).
func shareContexts(set savedSet) savedSet {
	out := set
	ref := func(s manifest.Sourced) manifest.Sourced {
		changed := false
		for _, c := range s.Manifest.Containers {
			changed = changed || (c.Build != nil && c.Build.Files != nil)
		}
		if !changed {
			return s
		}
		s.Manifest = s.Manifest.Clone()
		for i, c := range s.Manifest.Containers {
			if c.Build == nil || c.Build.Files == nil {
				continue
			}
			d := c.Build.Files.Digest()
			if out.Contexts == nil {
				out.Contexts = map[string]*manifest.Files{}
			}
			out.Contexts[d] = c.Build.Files
			s.Manifest.Containers[i].Build.Files = &manifest.Files{Source: c.Build.Files.Source, Hash: contextRef + d}
		}
		return s
	}
	out.Manifests = make([]manifest.Sourced, len(set.Manifests))
	for i, s := range set.Manifests {
		out.Manifests[i] = ref(s)
	}
	if set.Good != nil {
		out.Good = make(map[string]desired.Entry, len(set.Good))
		for k, e := range set.Good {
			e.Sourced = ref(e.Sourced)
			out.Good[k] = e
		}
	}
	return out
}

// restoreContexts puts the contexts a loaded set refers to back into its
// builds; a reference to a context the set does not hold is an error.
func restoreContexts(set *savedSet) error {
	restore := func(s *manifest.Sourced) error {
		for i, c := range s.Manifest.Containers {
			if c.Build == nil || c.Build.Files == nil || !strings.HasPrefix(c.Build.Files.Hash, contextRef) {
				continue
			}
			f, ok := set.Contexts[strings.TrimPrefix(c.Build.Files.Hash, contextRef)]
			if !ok {
				return fmt.Errorf("pod %s: build context %s not in the saved set", s.Manifest.ID, c.Build.Files.Hash)
			}
			s.Manifest.Containers[i].Build.Files = f
		}
		return nil
	}
	for i := range set.Manifests {
		if err := restore(&set.Manifests[i]); err != nil {
			return err
		}
	}
	for k, e := range set.Good {
		if err := restore(&e.Sourced); err != nil {
			return err
		}
		set.Good[k] = e
	}
	set.Contexts = nil
	return nil
}

// Store keeps the sources' last good sets under stateDir/sources, each
// written atomically (temp file, fsync, rename) and sealed with
// stateDir/state.key. It holds no lock: its caller (Merger) saves outside
// the lock that readers of the merged state take.
type Store struct {
	dir      string
	problems *atomicfile.Problems
	clock    clock.Clock
	log      *slog.Logger
	sealer   *sealer
}

// OpenStore returns the store under stateDir, loading (or making) its
// state key. problems receives the files that cannot be read or written
// (optional).
func OpenStore(stateDir string, problems *atomicfile.Problems, clk clock.Clock, log *slog.Logger) (*Store, error) {
	clk = clock.Or(clk)
	sl, err := loadSealer(stateDir, problems, clk.Now(), log)
	if err != nil {
		return nil, err
	}
	return &Store{dir: stateDir, problems: problems, clock: clk, log: log, sealer: sl}, nil
}

func (s *Store) path(name string) string {
	return filepath.Join(s.dir, "sources", name+".json")
}

// Load reads the saved set of source name. found is false when there is
// none. A saved set that cannot be read or decoded is moved aside (see
// atomicfile.Damaged) and reported; damaged then says why, for the
// source's notice. legacy: the set was saved in plain text by an earlier
// release (save it again to seal it).
func (s *Store) Load(name string) (set savedSet, found, legacy bool, damaged string) {
	path := s.path(name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return set, false, false, ""
	}
	if err == nil {
		b, legacy, err = s.sealer.open(b, name)
	}
	if err == nil {
		err = decodeSaved(b, name, &set)
	}
	if err != nil {
		p := atomicfile.Damaged(s.dir, path, err, s.clock.Now())
		s.problems.Report(p)
		damaged = "saved set unreadable: " + p.Error
		if p.KeptAs != "" {
			damaged += " (kept as " + p.KeptAs + ")"
		}
		s.log.Warn("saved set of source unreadable; the source counts as not delivered until it delivers again", "source", name, "file", p.File, "keptAs", p.KeptAs, "error", p.Error)
		return savedSet{}, false, false, damaged
	}
	return set, true, legacy, ""
}

// decodeSaved decodes a saved set of source name and checks that it is
// one: JSON of this source, every manifest with an id.
func decodeSaved(b []byte, name string, saved *savedSet) error {
	if err := json.Unmarshal(b, saved); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if saved.Name != name {
		return fmt.Errorf("holds no saved set of source %s (name %q)", name, saved.Name)
	}
	for i, s := range saved.Manifests {
		if s.Manifest.ID == "" {
			return fmt.Errorf("manifest %d has no id", i+1)
		}
	}
	return restoreContexts(saved)
}

// Save writes set durably; a failure is returned and recorded in the
// problems.
func (s *Store) Save(set savedSet) error {
	path := s.path(set.Name)
	set = shareContexts(set)
	b, err := json.Marshal(&set)
	if err != nil {
		return fmt.Errorf("encode last good set of source %s: %w", set.Name, err)
	}
	if b, err = s.sealer.seal(b, set.Name); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		p := atomicfile.WriteProblem(s.dir, path, err, s.clock.Now())
		if s.problems.Report(p) {
			s.log.Warn("cannot save last good set", "source", set.Name, "file", p.File, "error", err)
		}
		return fmt.Errorf("save last good set of source %s: %w", set.Name, err)
	}
	if s.problems.Resolve(filepath.ToSlash(filepath.Join("sources", set.Name+".json"))) {
		s.log.Info("last good set saved again", "source", set.Name)
	}
	return nil
}

// Remove removes the saved set of source name: after a restart the source
// must not count as delivered with a set it no longer holds.
func (s *Store) Remove(name string) {
	if err := os.Remove(s.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("cannot remove outdated saved set", "source", name, "error", err)
	}
}
