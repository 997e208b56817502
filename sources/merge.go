package sources

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	gosync "sync"
	"syscall"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// ErrEmpty is the error of a source that held manifests and now reads as
// empty, while sync.allowEmpty is off: a wrong path must not prune a host.
var ErrEmpty = errors.New("source now holds no manifests")

// ErrNotSaved is the error of an update that asked for an answer
// (Update.Reply) and whose set could not be saved under stateDir: it is
// not applied, the set before it stays in effect.
var ErrNotSaved = errors.New("set not saved")

// IsNoSpace reports whether err is a full disk (or quota).
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// Applied is the merge's answer to an update that asked for one
// (Update.Reply).
type Applied struct {
	// Err is why the update was not taken (ErrNotSaved, ErrEmpty, ...);
	// the source's set before it stays in effect.
	Err error
	// Accepted lists the IDs of the update's manifests the merge took, in
	// the update's order; Rejected those it turned down (a duplicate id or
	// a host-port conflict with another source), with the reasons.
	Accepted []string
	Rejected []validate.Rejection
}

// NoticeWaiting is the notice of a source that has not delivered a set
// yet (nor has a saved one): pruning waits for it.
const NoticeWaiting = "waiting for this source's first delivery: no pod is removed until every source has delivered"

// Entry is one accepted manifest with the revision of the source it came
// from when it was accepted.
type Entry struct {
	manifest.Sourced
	Revision string
	// StandIn marks the last accepted version of a manifest whose new
	// version was rejected: what runs, kept running.
	StandIn bool `json:"-"`
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
	// Delivered is false until the source delivered a set (or its saved
	// set was loaded); until every source has, nothing is pruned, and
	// Notice says so.
	Delivered bool   `json:"delivered"`
	Notice    string `json:"notice,omitempty"`
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
	// Problems receives the saved sets that could not be read or written
	// (optional).
	Problems *atomicfile.Problems
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
	// sealer seals the saved sets (nil without StateDir).
	sealer *sealer
}

// sourceState is one source's last good set. It is what is persisted.
type sourceState struct {
	Name        string             `json:"name"`
	Type        string             `json:"type"`
	Revision    string             `json:"revision"`
	LastSuccess time.Time          `json:"lastSuccess"`
	Manifests   []manifest.Sourced `json:"manifests"`
	// Good holds the last version of every ID the source declares that the
	// merge accepted, so that a rejected new version never replaces a
	// running one.
	Good      map[string]Entry `json:"good"`
	Delivered bool             `json:"-"`
	Err       string           `json:"-"`
	// dirty: Good changed since the state was saved; setDirty: the set
	// too (what is saved is an older set).
	dirty, setDirty bool
	// unloaded: the saved set could not be read (why, in unloadedWhy); the
	// source does not count as delivered until it delivers again.
	unloaded    bool
	unloadedWhy string
}

// SourceInfo names a source and its type, in config order.
type SourceInfo struct{ Name, Type string }

// NewMerger returns a merger for the given sources, loading their persisted
// last good sets. A source with a persisted set counts as delivered. A
// saved set that cannot be read or decoded is moved aside (see
// atomicfile.Damaged) and reported, in the source's notice and in
// opts.Problems (the source itself may well be up: its error stays its
// own); that source does not count as delivered, so nothing is pruned on
// its account until it delivers again.
func NewMerger(srcs []SourceInfo, opts MergeOptions, log *slog.Logger) (*Merger, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Merger{opts: opts, log: log, byKey: map[string]*sourceState{}}
	if opts.StateDir != "" {
		sl, err := loadSealer(opts.StateDir, opts.Problems, opts.Now(), log)
		if err != nil {
			return nil, err
		}
		m.sealer = sl
	}
	for _, s := range srcs {
		st := &sourceState{Name: s.Name, Type: s.Type, Good: map[string]Entry{}}
		m.load(st)
		m.order = append(m.order, st)
		m.byKey[s.Name] = st
	}
	return m, nil
}

func (m *Merger) statePath(name string) string {
	return filepath.Join(m.opts.StateDir, "sources", name+".json")
}

func (m *Merger) load(st *sourceState) {
	if m.opts.StateDir == "" {
		return
	}
	path := m.statePath(st.Name)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var saved sourceState
	legacy := false
	if err == nil {
		b, legacy, err = m.sealer.open(b, st.Name)
	}
	if err == nil {
		err = decodeSaved(b, st.Name, &saved)
	}
	if err != nil {
		// A damaged state file must not stop hostlet, nor count as the
		// source's set: the source reads again, and until it delivers,
		// nothing is pruned.
		p := atomicfile.Damaged(m.opts.StateDir, path, err, m.opts.Now())
		m.opts.Problems.Report(p)
		st.unloaded = true
		st.unloadedWhy = "saved set unreadable: " + p.Error
		if p.KeptAs != "" {
			st.unloadedWhy += " (kept as " + p.KeptAs + ")"
		}
		m.log.Warn("saved set of source unreadable; the source counts as not delivered until it delivers again", "source", st.Name, "file", p.File, "keptAs", p.KeptAs, "error", p.Error)
		return
	}
	st.Revision, st.LastSuccess, st.Manifests = saved.Revision, saved.LastSuccess, saved.Manifests
	if saved.Good != nil {
		st.Good = saved.Good
	}
	st.Delivered = true
	if legacy {
		// Saved in plain text by an earlier release: sealed now (a
		// failure is reported and the next save tries again).
		st.dirty = true
		if err := m.save(st); err != nil {
			m.log.Warn("cannot seal the saved set of an earlier release", "source", st.Name, "error", err)
		}
	}
	m.log.Info("loaded last good set", "source", st.Name, "revision", st.Revision, "manifests", len(st.Manifests))
}

// decodeSaved decodes a saved set of source name and checks that it is
// one: JSON of this source, every manifest with an id.
func decodeSaved(b []byte, name string, saved *sourceState) error {
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
	return nil
}

// save writes st's set durably; a failure is recorded in Problems.
func (m *Merger) save(st *sourceState) error {
	if m.opts.StateDir == "" {
		return nil
	}
	path := m.statePath(st.Name)
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode last good set of source %s: %w", st.Name, err)
	}
	if b, err = m.sealer.seal(b, st.Name); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
		p := atomicfile.WriteProblem(m.opts.StateDir, path, err, m.opts.Now())
		if m.opts.Problems.Report(p) {
			m.log.Warn("cannot save last good set", "source", st.Name, "file", p.File, "error", err)
		}
		return fmt.Errorf("save last good set of source %s: %w", st.Name, err)
	}
	if m.opts.Problems.Resolve(filepath.ToSlash(filepath.Join("sources", st.Name+".json"))) {
		m.log.Info("last good set saved again", "source", st.Name)
	}
	st.dirty, st.setDirty = false, false
	return nil
}

// saveDirty saves every source whose saved state is behind. A source
// whose saved set is older than the one in effect and cannot be saved has
// its saved file removed: after a restart it must not count as delivered
// with a set it no longer holds (pods would be pruned on its account).
func (m *Merger) saveDirty() {
	for _, s := range m.order {
		if !s.dirty && !s.setDirty {
			continue
		}
		if err := m.save(s); err != nil && s.setDirty {
			if rerr := os.Remove(m.statePath(s.Name)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				m.log.Warn("cannot remove outdated saved set", "source", s.Name, "error", rerr)
			}
		}
	}
}

// Seed sets what runs of a source now as its last good set and the last
// accepted version of each of its IDs, as if the source had delivered it:
// `hostlet diff` seeds the merge with the pods on the engine, then applies
// what the sources read, and so merges exactly as the running hostlet would.
func (m *Merger) Seed(name, revision string, running []manifest.Sourced) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.byKey[name]
	if st == nil {
		return
	}
	st.Revision, st.Manifests, st.Delivered = revision, running, true
	for _, s := range running {
		st.Good[s.Manifest.ID] = Entry{Sourced: s, Revision: revision}
	}
	m.cached = nil
}

// MarkDelivered counts a source as delivered without a set (a push source
// nobody has pushed to yet holds nothing, and waits for nothing), unless
// its saved set could not be loaded: then it waits for a fresh set.
func (m *Merger) MarkDelivered(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.byKey[name]; st != nil && !st.unloaded {
		st.Delivered = true
		m.cached = nil
	}
}

// Apply takes one update. It reports whether the merged state may have
// changed. An error, an empty set where the source held manifests and
// allowEmpty is off, or a set holding a document without an id keeps the
// last good set and records the error. An update with a Reply is answered
// there (without blocking) once it is taken or refused: it is taken only
// once its set is saved durably (ErrNotSaved otherwise, and the set before
// it stays in effect).
func (m *Merger) Apply(u Update) bool {
	changed, res := m.apply(u)
	if u.Reply != nil {
		select {
		case u.Reply <- res:
		default:
			m.log.Warn("update reply not taken", "source", u.Source)
		}
	}
	return changed
}

func (m *Merger) apply(u Update) (bool, Applied) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.byKey[u.Source]
	if st == nil {
		m.log.Warn("update from an unknown source", "source", u.Source)
		return false, Applied{Err: fmt.Errorf("unknown source %s", u.Source)}
	}
	if u.Err == nil {
		u.Err = unidentified(u.Manifests, m.opts.Validate)
	}
	if u.Err == nil && len(u.Manifests) == 0 && len(st.Manifests) > 0 && !m.opts.AllowEmpty {
		at := ""
		if st.Revision != "" {
			at = " at revision " + st.Revision
		}
		u.Err = fmt.Errorf("%w, but held %d%s; keeping its last good set (set sync.allowEmpty: true to allow this)", ErrEmpty, len(st.Manifests), at)
	}
	m.cached = nil
	if u.Err != nil {
		msg := errorText(u.Err)
		changed := st.Err != msg
		st.Err = msg
		if changed {
			m.log.Warn("source error; keeping its last good set", "source", st.Name, "error", u.Err, "revision", st.Revision)
		}
		return changed, Applied{Err: u.Err}
	}
	wasDelivered := st.Delivered
	same := wasDelivered && st.Err == "" && st.Revision == u.Revision && u.Revision != ""
	if same {
		st.LastSuccess = m.opts.Now()
		merged := m.merge()
		m.cached = &merged
		m.saveDirty()
		return false, answer(st, merged)
	}
	var undo func()
	if u.Reply != nil {
		undo = m.snapshot(st)
	}
	st.Revision, st.Manifests, st.Err, st.Delivered, st.unloaded = u.Revision, u.Manifests, "", true, false
	st.LastSuccess = m.opts.Now()
	forgetUndeclared(st)
	st.dirty, st.setDirty = true, true
	// Merge now: the merge records which versions were accepted (the last
	// good versions), and those are persisted with the set.
	merged := m.merge()
	if u.Reply != nil {
		if err := m.save(st); err != nil {
			undo()
			m.cached = nil
			m.log.Warn("update not taken: its set could not be saved; the set before it stays in effect", "source", st.Name, "revision", u.Revision, "error", err)
			return false, Applied{Err: fmt.Errorf("%w: %w", ErrNotSaved, err)}
		}
	}
	m.cached = &merged
	m.saveDirty()
	m.log.Info("source updated", "source", st.Name, "revision", u.Revision, "manifests", len(u.Manifests))
	return true, answer(st, merged)
}

// snapshot returns a function that puts st's set, and every source's last
// good versions, back as they are now.
func (m *Merger) snapshot(st *sourceState) func() {
	type saved struct {
		good            map[string]Entry
		dirty, setDirty bool
	}
	all := make([]saved, len(m.order))
	for i, s := range m.order {
		all[i] = saved{good: maps.Clone(s.Good), dirty: s.dirty, setDirty: s.setDirty}
	}
	own := *st
	return func() {
		for i, s := range m.order {
			s.Good, s.dirty, s.setDirty = all[i].good, all[i].dirty, all[i].setDirty
		}
		st.Revision, st.Manifests, st.Err, st.Delivered, st.unloaded, st.LastSuccess = own.Revision, own.Manifests, own.Err, own.Delivered, own.unloaded, own.LastSuccess
	}
}

// answer is what the merge made of st's set.
func answer(st *sourceState, merged State) Applied {
	res := Applied{Accepted: []string{}, Rejected: []validate.Rejection{}}
	turnedDown := map[string]bool{}
	for _, rj := range merged.Rejected {
		if rj.Source == st.Name {
			res.Rejected = append(res.Rejected, rj)
			turnedDown[rj.ID] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range st.Manifests {
		id := s.Manifest.ID
		if !turnedDown[id] && !seen[id] {
			seen[id] = true
			res.Accepted = append(res.Accepted, id)
		}
	}
	return res
}

// unidentified returns an error for the first manifest without an id: a
// document that is no manifest at all (an error page, a config file) cannot
// be matched to a pod, so the read proves nothing about which pods to
// remove.
func unidentified(ms []manifest.Sourced, opts validate.Options) error {
	for _, s := range ms {
		if s.Manifest.ID != "" {
			continue
		}
		var reasons []string
		for _, e := range validate.Flatten(validate.Manifest(s, opts)) {
			reasons = append(reasons, e.Detail)
			if len(reasons) == 3 {
				reasons = append(reasons, "...")
				break
			}
		}
		return fmt.Errorf("%s: manifest %d has no id, so it cannot be matched to a pod; keeping the last good set (%s)", s.Origin, s.Origin.Index+1, strings.Join(reasons, "; "))
	}
	return nil
}

// forgetUndeclared drops the last good versions of IDs st no longer
// declares.
func forgetUndeclared(st *sourceState) {
	declared := map[string]bool{}
	for _, s := range st.Manifests {
		declared[s.Manifest.ID] = true
	}
	for id := range st.Good {
		if !declared[id] {
			delete(st.Good, id)
		}
	}
}

// State merges every source's last good set, in config order. A manifest
// whose new version is rejected (invalid, a duplicate, or losing a host-port
// conflict) keeps its last accepted version applied; the rejection is
// reported all the same.
func (m *Merger) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cached == nil {
		st := m.merge()
		m.cached = &st
	}
	return *m.cached
}

// merge computes the state. It records every manifest it accepts in its
// source's Good map (marking the source dirty when that changed), so that a
// later rejected version can fall back to it.
func (m *Merger) merge() State {
	var (
		first []validate.Source
		st    State
		ready = true
	)
	for _, s := range m.order {
		ready = ready && s.Delivered
		status := Status{Name: s.Name, Type: s.Type, Revision: s.Revision, LastSuccess: s.LastSuccess, Error: s.Err, Manifests: len(s.Manifests), Delivered: s.Delivered}
		if !s.Delivered {
			status.Notice = NoticeWaiting
			if s.unloaded {
				status.Notice = s.unloadedWhy + "; " + NoticeWaiting
			}
		}
		st.Sources = append(st.Sources, status)
		first = append(first, validate.Source{Name: s.Name, Manifests: s.Manifests})
	}
	st.Ready = ready
	res := validate.Set(first, m.opts.Validate)
	st.Rejected = res.Rejected

	// Further passes: where a rejected manifest's ID would not run at all,
	// its last accepted version (what runs) stands in for it, weighed before
	// every other manifest, so that a new manifest taking its host port is
	// the one rejected: a rejected manifest never takes a running pod down.
	// A duplicate that loses to an earlier source does not stand in: its
	// pod runs, from the source that wins. Passes repeat until no new
	// stand-in appears.
	reported := map[string]bool{}
	for _, rj := range st.Rejected {
		reported[rj.Source+"\x00"+rj.ID] = true
	}
	standIn := map[string]map[string]bool{}
	addStandIns := func(r validate.Result) bool {
		running := map[string]bool{}
		for _, a := range r.Accepted {
			running[a.Manifest.ID] = true
		}
		grew := false
		for _, rj := range r.Rejected {
			src := m.byKey[rj.Source]
			if src == nil || running[rj.ID] || standIn[rj.Source][rj.ID] {
				continue
			}
			if _, ok := src.Good[rj.ID]; !ok {
				continue
			}
			if standIn[rj.Source] == nil {
				standIn[rj.Source] = map[string]bool{}
			}
			standIn[rj.Source][rj.ID] = true
			running[rj.ID] = true
			grew = true
		}
		return grew
	}
	res2 := res
	for pass := 0; addStandIns(res2) && pass < 16; pass++ {
		incumbents := validate.Source{Name: "running"}
		var second []validate.Source
		for _, s := range m.order {
			list := make([]manifest.Sourced, 0, len(s.Manifests))
			for _, man := range s.Manifests {
				if standIn[s.Name][man.Manifest.ID] {
					if good := s.Good[man.Manifest.ID].Sourced; !containsOrigin(incumbents.Manifests, good.Origin) {
						incumbents.Manifests = append(incumbents.Manifests, good)
					}
					continue
				}
				list = append(list, man)
			}
			second = append(second, validate.Source{Name: s.Name, Manifests: list})
		}
		res2 = validate.Set(append([]validate.Source{incumbents}, second...), m.opts.Validate)
		for _, rj := range res2.Rejected {
			if !reported[rj.Source+"\x00"+rj.ID] {
				reported[rj.Source+"\x00"+rj.ID] = true
				st.Rejected = append(st.Rejected, rj)
			}
		}
	}
	rejectedIDs := standIn
	// A manifest rejected in the first pass whose running version, identical
	// to it, stands in and is accepted was not really turned down: the
	// conflict was with a newcomer that lost in the end. Drop that report.
	if len(standIn) > 0 {
		final := map[string]bool{}
		for _, a := range res2.Accepted {
			final[a.Origin.Source+"\x00"+a.Manifest.ID] = true
		}
		kept := st.Rejected[:0]
		for _, rj := range st.Rejected {
			src := m.byKey[rj.Source]
			if src != nil && standIn[rj.Source][rj.ID] && final[rj.Source+"\x00"+rj.ID] {
				if cur, ok := declared(src, rj.ID); ok && reflect.DeepEqual(cur.Manifest, src.Good[rj.ID].Manifest) {
					continue
				}
			}
			kept = append(kept, rj)
		}
		st.Rejected = kept
	}
	// Accepted manifests in config order: source, then position in it.
	rank := map[string]int{}
	n := 0
	for _, s := range m.order {
		for _, man := range s.Manifests {
			k := s.Name + "\x00" + man.Manifest.ID
			if _, ok := rank[k]; !ok {
				rank[k] = n
				n++
			}
		}
	}
	sort.SliceStable(res2.Accepted, func(i, j int) bool {
		a, b := res2.Accepted[i], res2.Accepted[j]
		return rank[a.Origin.Source+"\x00"+a.Manifest.ID] < rank[b.Origin.Source+"\x00"+b.Manifest.ID]
	})
	// Map accepted manifests back to their entries (and revisions).
	for _, a := range res2.Accepted {
		src := m.byKey[a.Origin.Source]
		if src == nil {
			continue
		}
		e := Entry{Sourced: a, Revision: src.Revision}
		if rejectedIDs[src.Name][a.Manifest.ID] {
			// The last good version standing in for a rejected one.
			e = src.Good[a.Manifest.ID]
			e.StandIn = true
		} else if old, ok := src.Good[a.Manifest.ID]; !ok || !reflect.DeepEqual(old, e) {
			src.Good[a.Manifest.ID] = e
			src.dirty = true
		}
		st.Accepted = append(st.Accepted, e)
	}
	return st
}

func containsOrigin(list []manifest.Sourced, o manifest.Origin) bool {
	for _, x := range list {
		if x.Origin == o {
			return true
		}
	}
	return false
}

// declared returns the manifest the source now declares for id.
func declared(st *sourceState, id string) (manifest.Sourced, bool) {
	for _, s := range st.Manifests {
		if s.Manifest.ID == id {
			return s, true
		}
	}
	return manifest.Sourced{}, false
}

// errorText renders a source error on one line, as the status document
// and events show it: the errors of a multierror joined by "; ", at most
// textcap.ErrorTextBytes in all (each error is itself bounded, see
// manifest.Error); the errors that do not fit are counted as "; ... and N
// more errors".
func errorText(err error) string {
	errs := validate.Flatten(err)
	var b strings.Builder
	for i, e := range errs {
		part := strings.ReplaceAll(e.Error(), "\n", " ")
		sep := ""
		if i > 0 {
			sep = "; "
		}
		rest := ""
		if left := len(errs) - i - 1; left > 0 {
			rest = fmt.Sprintf("; ... and %d more errors", left)
		}
		if b.Len()+len(sep)+len(part)+len(rest) > textcap.ErrorTextBytes {
			if i == 0 {
				// The first error alone is too long: cut it.
				return textcap.Truncate(part, textcap.ErrorTextBytes-len(rest)) + rest
			}
			fmt.Fprintf(&b, "; ... and %d more errors", len(errs)-i)
			return b.String()
		}
		b.WriteString(sep)
		b.WriteString(part)
	}
	return b.String()
}
