package validate

import (
	"reflect"
	gosync "sync"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
)

// Memo remembers the field checks of manifests (what Manifest returns),
// so that a set is checked once, when its source delivers it, and not
// again at every merge with another source's set: a source whose
// manifests take long to check delays only its own update (see
// sources.Merger). A result is reused only for the very same manifest
// (deeply equal, origin included) checked with the same Options: a Memo
// belongs to one holder of the Options. Safe for concurrent use.
type Memo struct {
	inner   Checker // nil: Manifest
	mu      gosync.Mutex
	entries map[memoKey][]*memoEntry
	gen     uint64
}

// memoKey is a manifest's origin.
type memoKey struct {
	source, file string
	index        int
}

type memoEntry struct {
	s    manifest.Sourced
	errs []*manifest.Error
	used uint64
}

// memoVersions is how many versions of the manifest at one origin are
// remembered: the new one, the last accepted one standing in for it, and
// a few before.
const memoVersions = 4

// NewMemo returns an empty Memo in front of inner (nil: Manifest).
func NewMemo(inner Checker) *Memo {
	return &Memo{inner: inner, entries: map[memoKey][]*memoEntry{}}
}

// Check returns Manifest(s, opts), from the memo when it holds it (a nil
// Memo checks every time). The result is the caller's to change.
func (m *Memo) Check(s manifest.Sourced, opts Options) error {
	if m == nil {
		return Manifest(s, opts)
	}
	k := memoKey{s.Origin.Source, s.Origin.File, s.Origin.Index}
	m.mu.Lock()
	for _, e := range m.entries[k] {
		if reflect.DeepEqual(e.s, s) {
			e.used = m.gen
			errs := e.errs
			m.mu.Unlock()
			return rebuild(errs)
		}
	}
	m.mu.Unlock()
	var err error
	if m.inner != nil {
		err = m.inner.Check(s, opts)
	} else {
		err = Manifest(s, opts)
	}
	e := &memoEntry{s: s, errs: copyErrors(Flatten(err))}
	m.mu.Lock()
	e.used = m.gen
	list := append(m.entries[k], e)
	if len(list) > memoVersions {
		list = list[len(list)-memoVersions:]
	}
	m.entries[k] = list
	m.mu.Unlock()
	return err
}

// Sweep forgets the results not used since the last Sweep.
func (m *Memo) Sweep() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, list := range m.entries {
		kept := list[:0]
		for _, e := range list {
			if e.used == m.gen {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			delete(m.entries, k)
		} else {
			m.entries[k] = kept
		}
	}
	m.gen++
}

// copyErrors copies each error, so that the memo's stay as they were.
func copyErrors(errs []*manifest.Error) []*manifest.Error {
	out := make([]*manifest.Error, len(errs))
	for i, e := range errs {
		c := *e
		out[i] = &c
	}
	return out
}

// rebuild makes Manifest's result again from remembered errors.
func rebuild(errs []*manifest.Error) error {
	if len(errs) == 0 {
		return nil
	}
	var merr *multierror.Error
	for _, e := range copyErrors(errs) {
		merr = multierror.Append(merr, e)
	}
	return merr
}
