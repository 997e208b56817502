package atomicfile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
// Copies set aside in the same millisecond are numbered (-1, -2, ...) after
// every copy of that stamp still kept, so the newest always sorts last.
func Quarantine(path string, now time.Time) (string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	// A folder that cannot be listed is reported below, once the file
	// is out of the way.
	copies, _ := damagedCopies(dir, base)
	stamp := now.UTC().Format("20060102T150405.000Z")
	kept := path + damagedMark + stamp
	n := -1 // the highest number of a copy of this stamp; the unnumbered one is 0
	for _, c := range copies {
		if c.stamp == stamp {
			n = max(n, c.n)
		}
	}
	for {
		if n >= 0 {
			kept = fmt.Sprintf("%s%s%s-%d", path, damagedMark, stamp, n+1)
		}
		if _, err := os.Lstat(kept); errors.Is(err, fs.ErrNotExist) {
			break
		}
		n++
	}
	if err := os.Rename(path, kept); err != nil {
		return "", fmt.Errorf("move damaged %s aside: %w", path, err)
	}
	copies, err := damagedCopies(dir, base)
	if err != nil {
		return kept, err
	}
	for len(copies) > MaxDamaged {
		if err := os.RemoveAll(filepath.Join(dir, copies[0].name)); err != nil {
			return kept, fmt.Errorf("remove old damaged copy of %s: %w", path, err)
		}
		copies = copies[1:]
	}
	if err := SyncDir(dir); err != nil {
		return kept, err
	}
	return kept, nil
}

// damagedCopy is a copy Quarantine set aside: its name, its time stamp and
// its number within that stamp (0 for the unnumbered one).
type damagedCopy struct {
	name, stamp string
	n           int
}

// damagedCopies lists the copies of base in dir, oldest first: by stamp,
// then by number (-10 after -9).
func damagedCopies(dir, base string) ([]damagedCopy, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list damaged copies of %s: %w", filepath.Join(dir, base), err)
	}
	var copies []damagedCopy
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+damagedMark)
		if !ok {
			continue
		}
		c := damagedCopy{name: e.Name(), stamp: rest}
		if stamp, num, found := strings.Cut(rest, "Z-"); found {
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				c.stamp, c.n = stamp+"Z", n
			}
		}
		copies = append(copies, c)
	}
	slices.SortFunc(copies, func(a, b damagedCopy) int {
		return cmp.Or(strings.Compare(a.stamp, b.stamp), cmp.Compare(a.n, b.n))
	})
	return copies, nil
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
