package sources

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	gosync "sync"
	"syscall"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources/desired"
	"github.com/hostlet/hostlet/validate"
)

// ErrEmpty is the error of a source that held manifests and now reads as
// empty, while sync.allowEmpty is off: a wrong path must not prune a host.
var ErrEmpty = desired.ErrEmpty

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
	// Accepted: the desired manifests, in config order; a stand-in (Kind
	// desired.StandIn) is the last accepted version of a manifest whose
	// new version was rejected.
	Accepted []desired.Entry
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
	// Clock dates every source's last success and the saved sets'
	// problems; nil means clock.Real.
	Clock clock.Clock
	// ValidateDeadline bounds the field checks of one update
	// (DefaultValidateDeadline when 0); see Merger.precheck.
	ValidateDeadline time.Duration
	// Secrets readies, before they are checked, the manifests of an
	// update that carry encrypted files for this host (secrets.Tokenize:
	// each encrypted value as a token of its plaintext), or gives each
	// the error that turns it down, and reports whether any got one; nil
	// leaves them as they are.
	Secrets func(ms []manifest.Sourced) (failed bool)
}

// Merger keeps every source's last good set, keyed by source, merges them
// in config order into one desired set (sources/desired computes it) and
// persists them (Store).
//
// Two locks: applyMu makes updates one at a time and is held while sets
// are saved; mu guards only the published State, so State (what /status,
// /metrics and the reporter read) never waits on a disk.
type Merger struct {
	opts    MergeOptions
	log     *slog.Logger
	store   *Store // nil without StateDir
	applyMu gosync.Mutex
	// Guarded by applyMu.
	order []*sourceState
	byKey map[string]*sourceState
	mu    gosync.Mutex
	state State // guarded by mu
	// memo remembers the field checks of the manifests (opts.Validate's
	// Checker, unless a test replaces it).
	memo *validate.Memo
	// overdue holds, by source, the start of checks past their
	// deadline that have not ended (deadline.go).
	wmu     gosync.Mutex
	overdue map[string]time.Time
	// pending holds, by overdue source, its latest refused update
	// (guarded by wmu); retries hands it back (Retries).
	pending map[string]Update
	retries chan Update
}

// sourceState is one source's state in the merger.
type sourceState struct {
	// set is the set in effect: the last good set the source delivered.
	set desired.Source
	// good holds the last version of every ID the source declares that the
	// merge accepted, so that a rejected new version never replaces a
	// running one.
	good        map[string]desired.Entry
	lastSuccess time.Time
	err         string
	// dirty: good changed since the state was saved; setDirty: the set
	// too (what is saved is an older set).
	dirty, setDirty bool
	// unloaded: the saved set could not be read (why, in unloadedWhy); the
	// source does not count as delivered until it delivers again.
	unloaded    bool
	unloadedWhy string
	// secretsFailed: a secret of the set in effect could not be decrypted
	// (MergeOptions.Secrets), or its tokens were loaded from the saved
	// set; the same revision is taken again.
	secretsFailed bool
}

// saved is what of st is saved.
func (st *sourceState) saved() savedSet {
	return savedSet{Name: st.set.Name, Type: st.set.Type, Revision: st.set.Revision, LastSuccess: st.lastSuccess, Manifests: st.set.Manifests, Good: st.good}
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
	opts.Clock = clock.Or(opts.Clock)
	if opts.ValidateDeadline <= 0 {
		opts.ValidateDeadline = DefaultValidateDeadline
	}
	m := &Merger{opts: opts, log: log, byKey: map[string]*sourceState{}, memo: validate.NewMemo(nil), overdue: map[string]time.Time{},
		pending: map[string]Update{}, retries: make(chan Update, max(len(srcs), 1))}
	m.opts.Validate.Checker = m.memo
	if opts.StateDir != "" {
		store, err := OpenStore(opts.StateDir, opts.Problems, opts.Clock, log)
		if err != nil {
			return nil, err
		}
		m.store = store
	}
	for _, s := range srcs {
		st := &sourceState{set: desired.Source{Snapshot: manifest.Snapshot{Name: s.Name, Type: s.Type}}, good: map[string]desired.Entry{}}
		m.load(st)
		m.order = append(m.order, st)
		m.byKey[s.Name] = st
	}
	m.publish(m.compute())
	return m, nil
}

func (m *Merger) load(st *sourceState) {
	if m.store == nil {
		return
	}
	saved, found, legacy, damaged := m.store.Load(st.set.Name)
	if damaged != "" {
		// A damaged state file must not stop hostlet, nor count as the
		// source's set: the source reads again, and until it delivers,
		// nothing is pruned.
		st.unloaded, st.unloadedWhy = true, damaged
		return
	}
	if !found {
		return
	}
	if err := m.precheck(st.set.Name, saved.Manifests); err != nil {
		// Not taken: the source reads again, and until it delivers,
		// nothing is pruned.
		st.unloaded, st.unloadedWhy = true, "saved set not loaded: "+err.Error()
		return
	}
	st.set.Revision, st.lastSuccess, st.set.Manifests = saved.Revision, saved.LastSuccess, saved.Manifests
	if saved.Good != nil {
		st.good = saved.Good
	}
	st.set.Delivered = true
	// A saved set's tokens were made with the host's keyed hash as it
	// was: the source's first delivery makes them again (the key may
	// have been replaced since), even at the same revision.
	st.secretsFailed = slices.ContainsFunc(saved.Manifests, func(s manifest.Sourced) bool { return s.Manifest.HasSecrets() })
	if legacy {
		// Saved in plain text by an earlier release: sealed now (a
		// failure is reported and the next save tries again).
		st.dirty = true
		if err := m.save(st); err != nil {
			m.log.Warn("cannot seal the saved set of an earlier release", "source", st.set.Name, "error", err)
		}
	}
	m.log.Info("loaded last good set", "source", st.set.Name, "revision", st.set.Revision, "manifests", len(st.set.Manifests))
}

// save writes st's set durably (with applyMu held, never mu).
func (m *Merger) save(st *sourceState) error {
	if m.store == nil {
		return nil
	}
	if err := m.store.Save(st.saved()); err != nil {
		return err
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
			m.store.Remove(s.set.Name)
		}
	}
}

// MarkDelivered counts a source as delivered without a set (a push source
// nobody has pushed to yet holds nothing, and waits for nothing), unless
// its saved set could not be loaded: then it waits for a fresh set.
func (m *Merger) MarkDelivered(name string) {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if st := m.byKey[name]; st != nil && !st.unloaded {
		st.set.Delivered = true
		m.publish(m.compute())
	}
}

// Apply takes one update. It reports whether the merged state may have
// changed. An error, an empty set where the source held manifests and
// allowEmpty is off, or a set holding a document without an id keeps the
// last good set and records the error (desired.Admit). An update with a
// Reply is answered there (without blocking) once it is taken or refused:
// it is taken only once its set is saved durably (ErrNotSaved otherwise,
// and the set before it stays in effect). Sets are saved before State
// shows them, and without holding the lock State takes.
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
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	st := m.byKey[u.Source]
	if st == nil {
		m.log.Warn("update from an unknown source", "source", u.Source)
		return false, Applied{Err: fmt.Errorf("unknown source %s", u.Source)}
	}
	// A revision taken before is not taken (nor decrypted) again at each
	// poll, unless a secret of it could not be decrypted then.
	unchanged := st.set.Delivered && st.err == "" && st.set.Revision == u.Revision && u.Revision != "" && !st.secretsFailed
	secretsFailed := false
	if m.opts.Secrets != nil && u.Err == nil && !unchanged {
		// In a copy: the update's manifests are the source's.
		u.Manifests = slices.Clone(u.Manifests)
		secretsFailed = m.opts.Secrets(u.Manifests)
	}
	snap := manifest.Snapshot{Name: u.Source, Type: st.set.Type, Revision: u.Revision, Files: u.Files, Manifests: u.Manifests}
	readErr := u.Err
	if readErr == nil && len(u.Manifests) <= manifest.MaxSourceManifests {
		readErr = m.precheck(u.Source, u.Manifests)
		if errors.Is(readErr, ErrValidationOverdue) {
			m.retryLater(u)
		}
	}
	next, err := desired.Admit(st.set, snap, readErr, desired.Options{AllowEmpty: m.opts.AllowEmpty, Validate: m.opts.Validate})
	if err != nil {
		msg := ErrorText(err)
		changed := st.err != msg
		st.err = msg
		if changed {
			m.log.Warn("source error; keeping its last good set", "source", st.set.Name, "error", msg, "revision", st.set.Revision)
			m.publish(m.compute())
		}
		return changed, Applied{Err: err}
	}
	if unchanged {
		st.lastSuccess = m.opts.Clock.Now()
		merged := m.compute()
		m.publish(merged)
		m.saveDirty()
		return false, answer(st, merged)
	}
	taken, res := m.take(st, next, u)
	if res.Err == nil {
		st.secretsFailed = secretsFailed
	}
	return taken, res
}

// take makes next the set in effect of st. With u.Reply, it does so only
// once the set is saved; State shows the new set only once it is taken.
func (m *Merger) take(st *sourceState, next desired.Source, u Update) (bool, Applied) {
	undo := m.snapshot(st)
	st.set, st.err, st.unloaded = next, "", false
	st.lastSuccess = m.opts.Clock.Now()
	st.dirty, st.setDirty = true, true
	// The merge records which versions were accepted (the last good
	// versions), and those are persisted with the set.
	merged := m.compute()
	if u.Reply != nil {
		if err := m.save(st); err != nil {
			undo()
			m.log.Warn("update not taken: its set could not be saved; the set before it stays in effect", "source", st.set.Name, "revision", u.Revision, "error", err)
			return false, Applied{Err: fmt.Errorf("%w: %w", ErrNotSaved, err)}
		}
	}
	m.publish(merged)
	m.saveDirty()
	m.log.Info("source updated", "source", st.set.Name, "revision", u.Revision, "manifests", len(u.Manifests))
	return true, answer(st, merged)
}

// snapshot returns a function that puts st's set, and every source's last
// good versions, back as they are now.
func (m *Merger) snapshot(st *sourceState) func() {
	type saved struct {
		good            map[string]desired.Entry
		dirty, setDirty bool
	}
	all := make([]saved, len(m.order))
	for i, s := range m.order {
		all[i] = saved{good: maps.Clone(s.good), dirty: s.dirty, setDirty: s.setDirty}
	}
	own := *st
	return func() {
		for i, s := range m.order {
			s.good, s.dirty, s.setDirty = all[i].good, all[i].dirty, all[i].setDirty
		}
		st.set, st.err, st.unloaded, st.lastSuccess = own.set, own.err, own.unloaded, own.lastSuccess
	}
}

// answer is what the merge made of st's set.
func answer(st *sourceState, merged State) Applied {
	res := Applied{Accepted: []string{}, Rejected: []validate.Rejection{}}
	turnedDown := map[string]bool{}
	for _, rj := range merged.Rejected {
		if rj.Source == st.set.Name {
			res.Rejected = append(res.Rejected, rj)
			turnedDown[rj.ID] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range st.set.Manifests {
		id := s.Manifest.ID
		if !turnedDown[id] && !seen[id] {
			seen[id] = true
			res.Accepted = append(res.Accepted, id)
		}
	}
	return res
}

// State returns the merge of every source's last good set, in config
// order, as last taken. A manifest whose new version is rejected (invalid,
// a duplicate, or losing a host-port conflict) keeps its last accepted
// version applied; the rejection is reported all the same. State only
// reads: it never computes, writes or waits for a save.
func (m *Merger) State() State {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state
}

// publish makes st what State returns.
func (m *Merger) publish(st State) {
	m.mu.Lock()
	m.state = st
	m.mu.Unlock()
}

// compute merges the sets in effect (desired.Compute) and records the
// versions it accepted as each source's last good versions, marking the
// sources whose versions changed as to be saved.
func (m *Merger) compute() State {
	in := desired.Input{Accepted: desired.Versions{}, Options: desired.Options{AllowEmpty: m.opts.AllowEmpty, Validate: m.opts.Validate}}
	for _, s := range m.order {
		in.Sources = append(in.Sources, s.set)
		in.Accepted[s.set.Name] = s.good
	}
	r := desired.Compute(in)
	m.memo.Sweep()
	for _, s := range m.order {
		if v := r.Versions[s.set.Name]; !reflect.DeepEqual(v, s.good) {
			s.good, s.dirty = v, true
		}
	}
	return State{Accepted: r.Accepted, Rejected: r.Rejected, Ready: r.Ready, Sources: m.statuses()}
}

// statuses are the sources' states as the status document shows them.
func (m *Merger) statuses() []Status {
	out := make([]Status, 0, len(m.order))
	for _, s := range m.order {
		status := Status{Name: s.set.Name, Type: s.set.Type, Revision: s.set.Revision, LastSuccess: s.lastSuccess, Error: s.err, Manifests: len(s.set.Manifests), Delivered: s.set.Delivered}
		if !s.set.Delivered {
			status.Notice = NoticeWaiting
			if s.unloaded {
				status.Notice = s.unloadedWhy + "; " + NoticeWaiting
			}
		}
		out = append(out, status)
	}
	return out
}

// ErrorText renders a source error on one line, as the status document
// and events show it: the errors of a multierror joined by "; ", at most
// textcap.ErrorTextBytes in all (each error is itself bounded, see
// manifest.Error); the errors that do not fit are counted as "; ... and N
// more errors".
func ErrorText(err error) string {
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
