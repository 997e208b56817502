package rollouts

import (
	"errors"
	"log/slog"
	"maps"
	"regexp"
	"strings"
	hsync "sync"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/sync/statefile"
	"github.com/hostlet/hostlet/validate"
)

// Bounds on holds: an operator's words are shown, never trusted.
const (
	// MaxHolds bounds the pods held at once.
	MaxHolds = 1000
	// MaxHoldText bounds a hold's reason; who holds is cut to 256 bytes.
	MaxHoldText = 1024
)

// ErrNotHeld is Release's error for a pod that is not held.
var ErrNotHeld = errors.New("pod is not held")

// podIDRE is an RFC 1123 DNS subdomain, as pod IDs are.
var podIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Store keeps the pods' rollouts, their last ready versions, the versions
// held back and the holds, saves them (RolloutsFile, HoldsFile), counts
// rollbacks, and marks the pods being applied (a hold waits for them).
// Its lock is its own: a caller that holds a lock of its own (the
// Syncer's) takes it first, and the Store never calls out while holding
// its lock, but for the observe function Advance is given.
type Store struct {
	mu   hsync.Mutex
	pods map[string]*podRollout
	// file is RolloutsFile, holds HoldsFile.
	file, holds statefile.File
	// rollbacks counts rollbacks by pod since start.
	rollbacks map[string]uint64
	// applying holds the pods being applied now, each closed when done
	// (a hold waits for it).
	applying map[string]chan struct{}
	log      *slog.Logger
}

// Load returns the store of the rollouts and holds saved in stateDir ("":
// kept in memory only); sealer seals RolloutsFile (nil without a
// stateDir). A file that cannot be read is set aside and reported
// (Track): hostlet goes on without what it held.
func Load(stateDir string, clk clock.Clock, sealer *seal.Sealer, log *slog.Logger) *Store {
	s := &Store{pods: map[string]*podRollout{}, rollbacks: map[string]uint64{}, applying: map[string]chan struct{}{}, log: log}
	s.loadFiles(stateDir, clk, sealer)
	return s
}

// Track reports the files' problems found at load to p (and logs them),
// and every failed save from now on; a good save clears them.
func (s *Store) Track(p *atomicfile.Problems) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.file.Track(p); d != nil {
		s.log.Warn("rollout state unreadable; no pod has a version to roll back to until it is ready again", "file", d.File, "keptAs", d.KeptAs, "error", d.Error)
	}
	if d := s.holds.Track(p); d != nil {
		s.log.Warn("holds unreadable; no pod is held until held again", "file", d.File, "keptAs", d.KeptAs, "error", d.Error)
	}
}

// get returns the pod's rollout, made when absent; the caller holds mu.
func (s *Store) get(id string) *podRollout {
	r := s.pods[id]
	if r == nil {
		r = &podRollout{}
		s.pods[id] = r
	}
	return r
}

// changed marks the rollouts to be saved, with holds the holds file
// (holds, held back versions) too; the caller holds mu.
func (s *Store) changed(holds bool) {
	s.file.Changed()
	if holds {
		s.holds.Changed()
	}
}

// Save writes what changed since the last save; a holds file that cannot
// be saved is logged (a rollouts file is, in write).
func (s *Store) Save() {
	s.mu.Lock()
	snap := s.snapshotLocked()
	s.mu.Unlock()
	if err := s.write(snap); err != nil && s.log != nil {
		s.log.Warn("save holds", "error", err)
	}
}

// View is what the store decided before a sync plans: the pods restored
// to their last ready version, and the pods held.
type View struct {
	Restoring map[string]bool
	Held      map[string]bool
}

// Effective returns the pods to plan: pods, each pod whose desired
// version is held back replaced by its last version that was ready (when
// that is known and still allowed by hostPaths, the host's policy), and
// the View. hashOf is a pod's PodHash.
func (s *Store) Effective(pods []podspec.Pod, hashOf func(podspec.Pod) string, hostPaths validate.Options) ([]podspec.Pod, View) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := View{Restoring: map[string]bool{}, Held: map[string]bool{}}
	for id, r := range s.pods {
		if r.Hold != nil {
			v.Held[id] = true
		}
	}
	var out []podspec.Pod
	for i, p := range pods {
		id := p.Manifest.ID
		r := s.pods[id]
		if r == nil || r.Bad == nil || r.Bad.Hash != hashOf(p) {
			continue
		}
		if r.Good == nil {
			r.checkedGood = ""
			// Held back, but what to restore is not known (the sealed
			// rollouts were lost): what runs is left as it is, as a
			// held pod is, rather than the bad version applied again.
			v.Held[id] = true
			r.unrestorable = "the last ready version is not known (rollouts.json was lost), so what runs is left as it is"
			continue
		}
		if out == nil {
			out = append([]podspec.Pod(nil), pods...)
		}
		if !s.restorableLocked(id, r, hostPaths) {
			continue
		}
		out[i] = r.Good.pod()
		v.Restoring[id] = true
	}
	if out == nil {
		return pods, v
	}
	return out, v
}

// restorableLocked reports whether r's last ready version may be
// restored: checked once per kept version (the host's policy is fixed
// while hostlet runs), not at every sync of a rolled back pod.
func (s *Store) restorableLocked(id string, r *podRollout, hostPaths validate.Options) bool {
	if r.checkedGood != r.Good.Hash {
		good := r.Good.pod()
		r.checkedGood, r.unrestorable = r.Good.Hash, ""
		if err := validate.Manifest(manifest.Sourced{Manifest: good.Manifest, Origin: manifest.Origin{Source: good.Source}}, hostPaths); err != nil {
			// The host's policy changed since: what was ready is not
			// allowed any more; the new version stays, and the status
			// says why.
			s.log.Warn("the last ready version of a rolled back pod is not valid on this host any more; not restored", "pod", id, "error", err)
			r.unrestorable = "the last ready version is not allowed on this host any more, so the new version stays: " + textcap.Truncate(err.Error(), 512)
		}
	}
	return r.unrestorable == ""
}

// Shown is the pod's rollout as the status shows it (nil for none): a
// rolled back pod's reason says why its last ready version is not
// restored, when it is not.
func (s *Store) Shown(id string) *Rollout {
	s.mu.Lock()
	defer s.mu.Unlock()
	ro := s.pods[id]
	if ro == nil || ro.Rollout.State == "" {
		return nil
	}
	shown := ro.Rollout
	if shown.State == RolloutRolledBack && ro.unrestorable != "" {
		shown.Reason += "; " + ro.unrestorable
	}
	if shown.Hold != nil {
		h := *shown.Hold
		shown.Hold = &h
	}
	for _, b := range ro.Past {
		shown.RolledBackBefore = append(shown.RolledBackBefore, PastRollback{Revision: b.Revision, Reason: b.Reason, At: b.At, Images: b.Images})
	}
	return &shown
}

// GoodPods are the last ready versions of the pods that have one.
func (s *Store) GoodPods() []podspec.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []podspec.Pod
	for _, r := range s.pods {
		if r.Good != nil {
			out = append(out, r.Good.pod())
		}
	}
	return out
}

// Rollbacks returns how many times each pod was rolled back since start.
func (s *Store) Rollbacks() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.rollbacks)
}

// CompletionsDue names the pods (of the desired ones) whose rollout has
// been ready for its minReadySeconds as far as the syncs saw: the next
// step may complete it.
func (s *Store) CompletionsDue(pods []podspec.Pod, now time.Time) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due map[string]bool
	for _, p := range pods {
		r := s.pods[p.Manifest.ID]
		if r == nil || r.Rollout.State != RolloutProgressing || r.Failed || r.readySince.IsZero() {
			continue
		}
		if minReady, _, _ := Settings(p.Manifest); now.Sub(r.readySince) >= minReady {
			if due == nil {
				due = map[string]bool{}
			}
			due[p.Manifest.ID] = true
		}
	}
	return due
}

// Due is when a rollout of pods (the desired ones) next needs a look
// without any event (a minReadySeconds or a deadline passing); zero for
// none.
func (s *Store) Due(pods []podspec.Pod) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var due time.Time
	for _, p := range pods {
		r := s.pods[p.Manifest.ID]
		if r == nil || r.Rollout.State != RolloutProgressing {
			continue
		}
		minReady, deadline, _ := Settings(p.Manifest)
		if d := r.due(minReady, deadline); !d.IsZero() && (due.IsZero() || d.Before(due)) {
			due = d
		}
	}
	return due
}

// cleanText replaces control characters and cuts s to n bytes.
func cleanText(s string, n int) string {
	return textcap.Truncate(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, strings.TrimSpace(s)), n)
}
