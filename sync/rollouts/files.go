package rollouts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/sync/statefile"
)

// RolloutsFile is the file under stateDir holding every pod's rollout:
// its state and the last version that was ready (the whole desired pod,
// its env values and files included: what a rollback restores, also
// after a restart). It is sealed (AES-256-GCM, a key derived from
// env-hash.key): it holds secrets, and one hostlet did not write does not
// open.
const RolloutsFile = "rollouts.json"

// HoldsFile is the file under stateDir holding what holds pods back: the
// operators' holds and the versions held back by a rollback. It is plain
// (none of it is secret) and apart from RolloutsFile, so that losing that
// file (damage, a lost key) never drops a hold nor lets a bad version be
// applied again.
const HoldsFile = "holds.json"

// MaxHoldsFileBytes bounds the HoldsFile read at start.
const MaxHoldsFileBytes = 4 << 20

// savedRollouts is the content of RolloutsFile (before it is sealed).
type savedRollouts struct {
	Pods map[string]*podRollout `json:"pods"`
}

// savedHolds is the content of HoldsFile.
type savedHolds struct {
	Pods     map[string]*Hold       `json:"pods"`
	HeldBack map[string]*badVersion `json:"heldBack,omitempty"`
	// RolledBackBefore are the pods' earlier rollbacks (podRollout.Past).
	RolledBackBefore map[string][]*badVersion `json:"rolledBackBefore,omitempty"`
}

// loadFiles reads the rollouts and holds saved in stateDir into s; sealer
// seals the rollouts (nil without a stateDir). A file that cannot be read
// is set aside and reported (Track): hostlet goes on without what it
// held.
func (s *Store) loadFiles(stateDir string, clk clock.Clock, sealer *seal.Sealer) {
	s.file.Init(stateDir, RolloutsFile, clk, sealer)
	s.holds.Init(stateDir, HoldsFile, clk, nil)
	s.file.Load(func(b []byte) error {
		pods, err := decodeRollouts(b, s.log)
		if err == nil {
			s.pods = pods
		}
		return err
	}, func() { s.pods = map[string]*podRollout{} })
	s.holds.Load(func(b []byte) error {
		saved, err := decodeHolds(b, s.log)
		for id, h := range saved.Pods {
			s.get(id).Hold = h
		}
		for id, bad := range saved.HeldBack {
			s.get(id).Bad = bad
		}
		for id, past := range saved.RolledBackBefore {
			s.get(id).Past = past
		}
		return err
	}, func() {})
}

// decodeRollouts decodes the content of a rollouts file, refusing what is
// not one. An entry whose kept version does not hash as recorded (written
// by another hash version) loses that version only: its pod has nothing
// to roll back to until it is ready again.
func decodeRollouts(b []byte, log *slog.Logger) (map[string]*podRollout, error) {
	var saved savedRollouts
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("decode rollouts: %w", err)
	}
	if saved.Pods == nil {
		return nil, errors.New("decode rollouts: no pods")
	}
	for id, r := range saved.Pods {
		switch {
		case r == nil:
			delete(saved.Pods, id)
		case r.Good != nil && (r.Good.Manifest.ID != id || len(r.Good.Manifest.Containers) == 0 || r.Good.Hash != manifest.PodHash(r.Good.Manifest)):
			if log != nil {
				log.Warn("the kept last ready version of a pod does not hash as recorded; the pod has none until it is ready again", "pod", id)
			}
			r.Good = nil
		}
	}
	return saved.Pods, nil
}

// decodeHolds decodes the content of a holds file. It is bounded
// (MaxHoldsFileBytes, MaxHolds holds, each one's text cleaned and cut as
// Hold does); an entry that is not a pod's is left out (and logged), the
// others kept: one bad line never drops every hold.
func decodeHolds(b []byte, log *slog.Logger) (savedHolds, error) {
	var saved savedHolds
	if len(b) > MaxHoldsFileBytes {
		return savedHolds{}, fmt.Errorf("decode holds: %d bytes is over the limit of %d", len(b), MaxHoldsFileBytes)
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		return savedHolds{}, fmt.Errorf("decode holds: %w", err)
	}
	if saved.Pods == nil {
		return savedHolds{}, errors.New("decode holds: no pods")
	}
	skip := func(what, id string) {
		if log != nil {
			log.Warn("an entry of the holds file is not a pod's; left out", "entry", what, "pod", textcap.Truncate(id, 64))
		}
	}
	n := 0
	for id, h := range saved.Pods {
		if h == nil || len(id) > 253 || !podIDRE.MatchString(id) || n >= MaxHolds {
			skip("hold", id)
			delete(saved.Pods, id)
			continue
		}
		n++
		h.By, h.Reason = cleanText(h.By, 256), cleanText(h.Reason, MaxHoldText)
	}
	for id, bad := range saved.HeldBack {
		if bad == nil || bad.Hash == "" || len(id) > 253 || !podIDRE.MatchString(id) {
			skip("held back version", id)
			delete(saved.HeldBack, id)
			continue
		}
		cleanBad(bad)
	}
	for id, past := range saved.RolledBackBefore {
		past = slices.DeleteFunc(past, func(b *badVersion) bool { return b == nil })
		if len(past) == 0 || len(id) > 253 || !podIDRE.MatchString(id) || n >= MaxHolds {
			skip("earlier rollbacks", id)
			delete(saved.RolledBackBefore, id)
			continue
		}
		n++
		if len(past) > MaxRolledBackBefore {
			past = past[len(past)-MaxRolledBackBefore:]
		}
		for _, b := range past {
			cleanBad(b)
		}
		saved.RolledBackBefore[id] = past
	}
	return saved, nil
}

// snapshot is both files as of one snapshot.
type snapshot struct {
	rollouts, holds *statefile.Snapshot
}

// snapshotLocked takes what changed of the rollouts and holds (see
// statefile.File.Snapshot). The caller holds mu.
func (s *Store) snapshotLocked() snapshot {
	var snap snapshot
	if s.file.Pending() {
		// A copy of each record: Write encodes it outside mu. What the
		// records point to (versions, holds) is replaced, never changed.
		saved := savedRollouts{Pods: make(map[string]*podRollout, len(s.pods))}
		for id, r := range s.pods {
			saved.Pods[id] = new(*r)
		}
		snap.rollouts = s.file.Snapshot(saved)
	}
	if s.holds.Pending() {
		saved := savedHolds{Pods: map[string]*Hold{}, HeldBack: map[string]*badVersion{}, RolledBackBefore: map[string][]*badVersion{}}
		for id, r := range s.pods {
			if len(r.Past) > 0 {
				saved.RolledBackBefore[id] = r.Past
			}
			if r.Hold != nil {
				saved.Pods[id] = r.Hold
			}
			if r.Bad != nil {
				saved.HeldBack[id] = r.Bad
			}
		}
		// The earlier rollbacks are a convenience for `hostlet images`:
		// they go before the file outgrows what loading accepts, and the
		// holds and held-back versions with it.
		if b, err := json.Marshal(saved); err == nil && len(b) > MaxHoldsFileBytes {
			saved.RolledBackBefore = nil
		}
		snap.holds = s.holds.Snapshot(saved)
	}
	return snap
}

// write saves a snapshot: the holds file first (the operator's lock) and
// its error apart. A rollouts file that cannot be saved is only logged
// (reported in the status's stateErrors, and retried at the next save).
// The caller does not hold mu.
func (s *Store) write(snap snapshot) (holdsErr error) {
	holdsErr = s.holds.Write(snap.holds)
	if err := s.file.Write(snap.rollouts); err != nil && s.log != nil {
		s.log.Warn("save rollouts", "error", err)
	}
	return holdsErr
}

// ReadStateSealer returns the sealer of the state files a hostlet with
// stateDir seals (RolloutsFile), from its env hash key, never creating or
// changing the key.
func ReadStateSealer(stateDir string) (*seal.Sealer, error) {
	h, err := podspec.ReadEnvHasher(stateDir)
	if err != nil {
		return nil, err
	}
	return h.StateSealer()
}

// ReadRollouts reads the rollouts and holds a hostlet saved under
// stateDir, as its status shows them, by pod ID (hostlet diff shows what
// is held back or held). No files are no rollouts. A file that cannot be
// read (the rollouts need the host's env hash key) is an error, returned
// with what the other file says.
func ReadRollouts(stateDir string) (map[string]Rollout, error) {
	out := map[string]Rollout{}
	var errs []error
	b, err := os.ReadFile(filepath.Join(stateDir, RolloutsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		errs = append(errs, fmt.Errorf("read rollouts: %w", err))
	default:
		if err := readSealedRollouts(stateDir, b, out); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(stateDir, RolloutsFile), err))
		}
	}
	b, err = os.ReadFile(filepath.Join(stateDir, HoldsFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return out, errors.Join(errs...)
	case err != nil:
		return out, errors.Join(append(errs, fmt.Errorf("read holds: %w", err))...)
	}
	saved, err := decodeHolds(b, nil)
	if err != nil {
		return out, errors.Join(append(errs, fmt.Errorf("%s: %w", filepath.Join(stateDir, HoldsFile), err))...)
	}
	for id, bad := range saved.HeldBack {
		out[id] = Rollout{State: RolloutRolledBack, Revision: bad.Revision, Hash: bad.Hash, PreviousHash: out[id].PreviousHash, Since: bad.At, Reason: bad.Reason, Images: bad.Images}
	}
	for id, h := range saved.Pods {
		ro := out[id]
		out[id] = Rollout{State: RolloutHeld, Revision: ro.Revision, Hash: ro.Hash, PreviousHash: ro.PreviousHash, Since: h.Since, Reason: h.Reason, Hold: h}
	}
	return out, errors.Join(errs...)
}

// readSealedRollouts opens a rollouts file's content b with the key in
// stateDir and adds its rollouts to out.
func readSealedRollouts(stateDir string, b []byte, out map[string]Rollout) error {
	sl, err := ReadStateSealer(stateDir)
	if err != nil {
		return err
	}
	if b, err = sl.Open(b, RolloutsFile); err != nil {
		return err
	}
	pods, err := decodeRollouts(b, nil)
	if err != nil {
		return err
	}
	for id, r := range pods {
		out[id] = r.Rollout
	}
	return nil
}

// maxImagesKept bounds the images a saved held-back version names.
const maxImagesKept = 64

// cleanBad cuts a saved held-back version's texts and images to size.
func cleanBad(b *badVersion) {
	b.Reason, b.Revision = textcap.Truncate(b.Reason, 4<<10), textcap.Truncate(b.Revision, 256)
	if len(b.Images) > maxImagesKept {
		b.Images = nil
	}
	for k, v := range b.Images {
		if len(k) > 253 || len(v) > 512 {
			delete(b.Images, k)
		}
	}
}
