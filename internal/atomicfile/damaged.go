package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	gosync "sync"
	"time"

	"github.com/hostlet/hostlet/internal/textcap"
)

// MaxDamaged is how many damaged copies of one state file Quarantine keeps
// beside it; older ones are removed.
const MaxDamaged = 3

// damagedMark separates a file's name from the time its damaged copy was
// set aside: NAME.corrupt-20260102T150405.000Z.
const damagedMark = ".corrupt-"

// Quarantine moves the damaged file (or folder) at path aside, to
// path.corrupt-<UTC time>, where an operator can inspect it, and removes
// all but the newest MaxDamaged such copies. It returns the copy's path.
func Quarantine(path string, now time.Time) (string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	stamp := now.UTC().Format("20060102T150405.000Z")
	kept := path + damagedMark + stamp
	for i := 1; ; i++ {
		if _, err := os.Lstat(kept); errors.Is(err, fs.ErrNotExist) {
			break
		}
		kept = fmt.Sprintf("%s%s%s-%d", path, damagedMark, stamp, i)
	}
	if err := os.Rename(path, kept); err != nil {
		return "", fmt.Errorf("move damaged %s aside: %w", path, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return kept, fmt.Errorf("list damaged copies of %s: %w", path, err)
	}
	var copies []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), base+damagedMark) {
			copies = append(copies, e.Name())
		}
	}
	// The time stamps sort as text; a name with a -N suffix sorts after
	// the same stamp without.
	sort.Strings(copies)
	for len(copies) > MaxDamaged {
		if err := os.RemoveAll(filepath.Join(dir, copies[0])); err != nil {
			return kept, fmt.Errorf("remove old damaged copy of %s: %w", path, err)
		}
		copies = copies[1:]
	}
	if err := SyncDir(dir); err != nil {
		return kept, err
	}
	return kept, nil
}

// Problem operations.
const (
	OpRead  = "read"
	OpWrite = "write"
)

// Problem is a state file hostlet could not read or write, as /status
// shows it.
type Problem struct {
	// File is the file's path relative to stateDir (sources/push.json).
	File string `json:"file"`
	// Op is OpRead or OpWrite.
	Op    string `json:"op"`
	Error string `json:"error"`
	// KeptAs is where a damaged file was set aside (relative to stateDir);
	// "" when it could not be, or for a failed write.
	KeptAs string `json:"keptAs,omitempty"`
	// Since is when the problem was first seen.
	Since time.Time `json:"since"`
}

// Damaged sets aside the state file at path (under stateDir) that could not
// be read or decoded (cause), and returns the read Problem to report: the
// cause (bounded), and where the copy is kept.
func Damaged(stateDir, path string, cause error, now time.Time) Problem {
	p := Problem{File: rel(stateDir, path), Op: OpRead, Error: textcap.Truncate(cause.Error(), textcap.DetailBytes), Since: now.UTC()}
	kept, err := Quarantine(path, now)
	if kept != "" {
		p.KeptAs = rel(stateDir, kept)
	}
	if err != nil {
		p.Error += "; " + textcap.Truncate(err.Error(), textcap.DetailBytes)
	}
	return p
}

// WriteProblem is the Problem of a failed write of path (under stateDir).
func WriteProblem(stateDir, path string, err error, now time.Time) Problem {
	return Problem{File: rel(stateDir, path), Op: OpWrite, Error: textcap.Truncate(err.Error(), textcap.DetailBytes), Since: now.UTC()}
}

func rel(stateDir, path string) string {
	if r, err := filepath.Rel(stateDir, path); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return path
}

// Problems is the list of state files that could not be read (since
// start) or written (the last time they were), and a count per file of
// every failure since start. The zero value
// is ready to use; a nil *Problems records nothing.
type Problems struct {
	mu     gosync.Mutex
	cur    map[string]Problem // by file and op
	counts map[string]uint64  // by file
}

// Report records p, counting it, and reports whether it is news: the
// file's first problem of that op, or one with another error text (log
// it then, not at every repeat).
func (ps *Problems) Report(p Problem) bool {
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.cur == nil {
		ps.cur, ps.counts = map[string]Problem{}, map[string]uint64{}
	}
	ps.counts[p.File]++
	k := p.File + "\x00" + p.Op
	old, seen := ps.cur[k]
	if seen && old.Error == p.Error {
		return false
	}
	if seen {
		p.Since = old.Since
	}
	ps.cur[k] = p
	return true
}

// Resolve drops the write problem of file: it was written since. It
// reports whether there was one. A read problem stays listed until
// hostlet restarts: it tells of the damaged copy kept for inspection.
func (ps *Problems) Resolve(file string) bool {
	if ps == nil {
		return false
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	k := file + "\x00" + OpWrite
	_, had := ps.cur[k]
	delete(ps.cur, k)
	return had
}

// List returns the problems now, by file then op; [] when there are none.
func (ps *Problems) List() []Problem {
	out := []Problem{}
	if ps == nil {
		return out
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, p := range ps.cur {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Op < out[j].Op
	})
	return out
}

// Counts returns every failure counted since start, by file.
func (ps *Problems) Counts() map[string]uint64 {
	out := map[string]uint64{}
	if ps == nil {
		return out
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for f, n := range ps.counts {
		out[f] = n
	}
	return out
}
