// Package statefile keeps one JSON file of the syncer's under stateDir
// (restarts.json, rollouts.json, holds.json): read at start, a damaged
// one set aside and reported, saved after changes from a snapshot taken
// under its owner's lock and written outside it, an older snapshot never
// over a newer one.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	gosync "sync"
	"sync/atomic"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/seal"
)

// File is one JSON file of the syncer's under stateDir (restart counts,
// rollouts, holds): loaded at start, saved after changes. Its value
// changes under its owner's lock; Snapshot takes a copy of it there, and
// Write encodes (and seals) and saves the copy outside the lock, so
// /status and /metrics wait neither on the disk nor on encoding a large
// value (a kept version's files and build context). Without a stateDir
// nothing is read or written.
type File struct {
	name     string
	path     string
	stateDir string
	dirty    bool
	// damaged is the problem found when the file was loaded (nil when it
	// loaded, or was not there); problems receives it and every failed
	// save (see Track).
	damaged  *atomicfile.Problem
	problems *atomicfile.Problems
	// seq numbers the snapshots (under the owner's lock); written is the
	// last one on disk and retry says the last write failed (under
	// writeMu, which orders the writes).
	seq     uint64
	writeMu gosync.Mutex
	written uint64
	retry   atomic.Bool
	// clock dates the file's problems.
	clock clock.Clock
	// sealer, when set, seals the file (it holds secrets: env values,
	// files' contents); a file that does not open with it is damaged.
	sealer *seal.Sealer
}

// Init names the file (under stateDir; "" for none), its clock and its
// sealer (nil for a plain file).
func (f *File) Init(stateDir, name string, clk clock.Clock, sealer *seal.Sealer) {
	f.sealer = sealer
	f.name, f.stateDir, f.clock = name, stateDir, clock.Or(clk)
	if stateDir != "" {
		f.path = filepath.Join(stateDir, name)
	}
}

// Load reads the file and decodes it. A file that cannot be read or
// decoded does not stop hostlet: it is moved aside (atomicfile.Damaged),
// reset empties the value, the problem is kept for TrackStateFiles, and a
// good file is written at the next save.
func (f *File) Load(decode func([]byte) error, reset func()) {
	if f.path == "" {
		return
	}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err == nil && f.sealer != nil {
		b, err = f.sealer.Open(b, f.name)
	}
	if err == nil {
		err = decode(b)
	}
	if err != nil {
		p := atomicfile.Damaged(f.stateDir, f.path, err, f.clock.Now())
		f.damaged = &p
		reset()
		f.dirty = true
	}
}

// Snapshot takes v, the file's value as of now, to save, or returns nil
// when nothing changed since the last snapshot that was written. The
// caller holds its owner's lock, and v is a copy nothing changes from
// now on (Write encodes it outside that lock); what v shares with the
// owner's value must be replaced there, never changed in place.
func (f *File) Snapshot(v any) *Snapshot {
	if f.path == "" || (!f.dirty && !f.retry.Swap(false)) {
		return nil
	}
	f.dirty = false
	f.seq++
	return &Snapshot{value: v, seq: f.seq}
}

// Snapshot is a state file's value as of one snapshot, encoded when it
// is written.
type Snapshot struct {
	value any
	seq   uint64
}

// encode is the file's content for snap: its value in JSON, sealed when
// the file is.
func (f *File) encode(snap *Snapshot) ([]byte, error) {
	b, err := json.Marshal(snap.value)
	if err == nil && f.sealer != nil {
		b, err = f.sealer.Seal(b, f.name)
	}
	return b, err
}

// Write saves snap unless a later snapshot was written already; writes
// are one at a time. A failed write is reported and retried at the next
// save.
func (f *File) Write(snap *Snapshot) error {
	if snap == nil {
		return nil
	}
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	if snap.seq <= f.written {
		return nil
	}
	data, err := f.encode(snap)
	if err != nil {
		f.retry.Store(true)
		return fmt.Errorf("encode %s: %w", f.name, err)
	}
	if err := atomicfile.WriteFile(f.path, data, 0o600); err != nil {
		f.retry.Store(true)
		f.problems.Report(atomicfile.WriteProblem(f.stateDir, f.path, err, f.clock.Now()))
		return fmt.Errorf("save %s: %w", f.name, err)
	}
	f.written = snap.seq
	f.problems.Resolve(f.name)
	return nil
}

// Changed marks the value changed: the next Snapshot takes it.
func (f *File) Changed() { f.dirty = true }

// Pending reports whether the next Snapshot takes anything (a change,
// or a write to retry), for an owner that builds the value to save.
func (f *File) Pending() bool { return f.path != "" && (f.dirty || f.retry.Load()) }

// Track reports the problem found when the file was loaded to p (and
// returns it, nil when none), and every save that fails from now on; a
// good save clears them.
func (f *File) Track(p *atomicfile.Problems) *atomicfile.Problem {
	f.problems = p
	if f.damaged != nil {
		p.Report(*f.damaged)
	}
	return f.damaged
}

// Damaged is the problem found when the file was loaded, nil when none.
func (f *File) Damaged() *atomicfile.Problem { return f.damaged }
