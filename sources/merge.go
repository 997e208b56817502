package sources

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// ErrEmpty is the error of a source that held manifests and now reads as
// empty, while sync.allowEmpty is off: a wrong path must not prune a host.
var ErrEmpty = errors.New("source now holds no manifests; keeping its last good set (set sync.allowEmpty: true to allow this)")

// Entry is one accepted manifest with the revision of the source it came
// from when it was accepted.
type Entry struct {
	manifest.Sourced
	Revision string
}

// Status is one source's state, as the status document shows it.
type Status struct {
	Name        string    `json:"name"`
	Type        string    `json:"type"`
	Revision    string    `json:"revision"`
	LastSuccess time.Time `json:"lastSuccess"`
	Error       string    `json:"error"`
	// Manifests counts everything the source decoded, rejected ones included.
	Manifests int `json:"manifests"`
}

// State is the merge of every source.
type State struct {
	Accepted []Entry
	Rejected []validate.Rejection
	Sources  []Status
	// Ready is true once every source has delivered a first set (fresh or
	// persisted); nothing is removed before that.
	Ready bool
}

// MergeOptions configure a Merger.
type MergeOptions struct {
	AllowEmpty bool
	Validate   validate.Options
	// StateDir persists every source's last good set under
	// StateDir/sources; "" keeps them in memory only.
	StateDir string
	Now      func() time.Time
}

// Merger keeps every source's last good set, keyed by source, and merges
// them in config order into one desired set.
type Merger struct {
	opts  MergeOptions
	log   *slog.Logger
	mu    gosync.Mutex
	order []*sourceState
	byKey map[string]*sourceState
	// cached is the last merge; nil after anything changed.
	cached *State
}

// sourceState is one source's last good set. It is what is persisted.
type sourceState struct {
	Name        string             `json:"name"`
	Type        string             `json:"type"`
	Revision    string             `json:"revision"`
	LastSuccess time.Time          `json:"lastSuccess"`
	Manifests   []manifest.Sourced `json:"manifests"`
	// Good holds the last valid version of every ID the source declared, so
	// that an invalid new version never replaces a running one.
	Good      map[string]Entry `json:"good"`
	Delivered bool             `json:"-"`
	Err       string           `json:"-"`
}

// SourceInfo names a source and its type, in config order.
type SourceInfo struct{ Name, Type string }

// NewMerger returns a merger for the given sources, loading their persisted
// last good sets. A source with a persisted set counts as delivered.
func NewMerger(srcs []SourceInfo, opts MergeOptions, log *slog.Logger) (*Merger, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Merger{opts: opts, log: log, byKey: map[string]*sourceState{}}
	for _, s := range srcs {
		st := &sourceState{Name: s.Name, Type: s.Type, Good: map[string]Entry{}}
		if err := m.load(st); err != nil {
			return nil, err
		}
		m.order = append(m.order, st)
		m.byKey[s.Name] = st
	}
	return m, nil
}

func (m *Merger) statePath(name string) string {
	return filepath.Join(m.opts.StateDir, "sources", name+".json")
}

func (m *Merger) load(st *sourceState) error {
	if m.opts.StateDir == "" {
		return nil
	}
	b, err := os.ReadFile(m.statePath(st.Name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read last good set of source %s: %w", st.Name, err)
	}
	var saved sourceState
	if err := json.Unmarshal(b, &saved); err != nil {
		// A damaged state file must not stop hostlet: the source re-reads.
		m.log.Warn("ignoring unreadable persisted source state", "source", st.Name, "path", m.statePath(st.Name), "error", err)
		return nil
	}
	st.Revision, st.LastSuccess, st.Manifests = saved.Revision, saved.LastSuccess, saved.Manifests
	if saved.Good != nil {
		st.Good = saved.Good
	}
	st.Delivered = true
	m.log.Info("loaded last good set", "source", st.Name, "revision", st.Revision, "manifests", len(st.Manifests))
	return nil
}

func (m *Merger) save(st *sourceState) error {
	if m.opts.StateDir == "" {
		return nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(m.statePath(st.Name), b, 0o600)
}

// MarkDelivered counts a source as delivered without a set (a push source
// nobody has pushed to yet holds nothing, and waits for nothing).
func (m *Merger) MarkDelivered(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.byKey[name]; st != nil {
		st.Delivered = true
		m.cached = nil
	}
}

// Apply takes one update. It reports whether the merged state may have
// changed. An error, or an empty set where the source held manifests and
// allowEmpty is off, keeps the last good set and records the error.
func (m *Merger) Apply(u Update) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.byKey[u.Source]
	if st == nil {
		m.log.Warn("update from an unknown source", "source", u.Source)
		return false
	}
	if u.Err == nil && len(u.Manifests) == 0 && len(st.Manifests) > 0 && !m.opts.AllowEmpty {
		u.Err = fmt.Errorf("%w (it held %d at revision %s)", ErrEmpty, len(st.Manifests), st.Revision)
	}
	m.cached = nil
	if u.Err != nil {
		changed := st.Err != u.Err.Error()
		st.Err = u.Err.Error()
		if changed {
			m.log.Warn("source error; keeping its last good set", "source", st.Name, "error", u.Err, "revision", st.Revision)
		}
		return changed
	}
	wasDelivered := st.Delivered
	same := wasDelivered && st.Err == "" && st.Revision == u.Revision && u.Revision != ""
	st.Revision, st.Manifests, st.Err, st.Delivered = u.Revision, u.Manifests, "", true
	st.LastSuccess = m.opts.Now()
	if same {
		return false
	}
	m.refreshGood(st)
	if err := m.save(st); err != nil {
		m.log.Warn("persist last good set", "source", st.Name, "error", err)
	}
	m.log.Info("source updated", "source", st.Name, "revision", u.Revision, "manifests", len(u.Manifests))
	return true
}

// refreshGood records the valid manifests of st as its last good versions
// and forgets IDs the source no longer declares.
func (m *Merger) refreshGood(st *sourceState) {
	declared := map[string]bool{}
	for _, s := range st.Manifests {
		declared[s.Manifest.ID] = true
		if len(s.Errors) == 0 && validate.Manifest(s, m.opts.Validate) == nil {
			st.Good[s.Manifest.ID] = Entry{Sourced: s, Revision: st.Revision}
		}
	}
	for id := range st.Good {
		if !declared[id] {
			delete(st.Good, id)
		}
	}
}

// State merges every source's last good set, in config order. A manifest
// whose new version is invalid keeps its last good version applied; the
// rejection is reported all the same.
func (m *Merger) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cached == nil {
		st := m.merge()
		m.cached = &st
	}
	return *m.cached
}

func (m *Merger) merge() State {
	var (
		first []validate.Source
		st    State
		ready = true
	)
	for _, s := range m.order {
		ready = ready && s.Delivered
		st.Sources = append(st.Sources, Status{Name: s.Name, Type: s.Type, Revision: s.Revision, LastSuccess: s.LastSuccess, Error: s.Err, Manifests: len(s.Manifests)})
		first = append(first, validate.Source{Name: s.Name, Manifests: s.Manifests})
	}
	st.Ready = ready
	res := validate.Set(first, m.opts.Validate)
	st.Rejected = res.Rejected

	// Second pass: invalid manifests replaced by their last good version.
	invalid := map[string]map[string]bool{}
	for _, rj := range res.Rejected {
		if invalid[rj.Source] == nil {
			invalid[rj.Source] = map[string]bool{}
		}
		invalid[rj.Source][rj.ID] = true
	}
	var second []validate.Source
	for _, s := range m.order {
		list := make([]manifest.Sourced, 0, len(s.Manifests))
		for _, man := range s.Manifests {
			if invalid[s.Name][man.Manifest.ID] && validate.Manifest(man, m.opts.Validate) != nil {
				good, ok := s.Good[man.Manifest.ID]
				if !ok {
					continue
				}
				man = good.Sourced
			}
			list = append(list, man)
		}
		second = append(second, validate.Source{Name: s.Name, Manifests: list})
	}
	res2 := validate.Set(second, m.opts.Validate)
	// Map accepted manifests back to their entries (and revisions).
	for _, a := range res2.Accepted {
		rev := ""
		if src := m.byKey[a.Origin.Source]; src != nil {
			rev = src.Revision
			if g, ok := src.Good[a.Manifest.ID]; ok && g.Origin == a.Origin && invalid[src.Name][a.Manifest.ID] {
				rev = g.Revision
			}
		}
		st.Accepted = append(st.Accepted, Entry{Sourced: a, Revision: rev})
	}
	reported := map[string]bool{}
	for _, rj := range st.Rejected {
		reported[rj.Source+"\x00"+rj.ID] = true
	}
	for _, rj := range res2.Rejected {
		if !reported[rj.Source+"\x00"+rj.ID] {
			st.Rejected = append(st.Rejected, rj)
		}
	}
	return st
}
