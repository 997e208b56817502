package sync_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
)

const secretPodFmt = `
version: v1beta1
id: web
containers:
  - name: app
    image: "example.org/app:%s"
    env: [{name: DB_PASSWORD, value: hunter2-supersecret-value}]
`

// TestRolloutStateFiles: the rollouts file holds env values, so it is
// sealed (no plain value on disk) and one hostlet did not write (a
// crafted or damaged file) is set aside: nothing it names is run. Holds
// are kept apart and survive the loss of the rollouts.
func TestRolloutStateFiles(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(decodePod(t, strings.Replace(secretPodFmt, "%s", "1", 1)), e.pod("db", "r1", "example.org/db:1", "Auto", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	if _, err := e.s.Hold(e.ctx, "db", "alice", "migration"); err != nil {
		t.Fatal(err)
	}
	rollouts := filepath.Join(e.dir, hsync.RolloutsFile)
	b, err := os.ReadFile(rollouts)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("example.org/app")) || !bytes.HasPrefix(b, []byte("hostlet-sealed-v1\n")) {
		t.Fatalf("%s is not sealed: %.80q", hsync.RolloutsFile, b)
	}
	got, err := hsync.ReadRollouts(e.dir)
	if err != nil || got["web"].State != hsync.RolloutComplete || got["db"].State != hsync.RolloutHeld || got["db"].Hold.By != "alice" {
		t.Fatalf("ReadRollouts: %+v, %v; want web Complete and db held by alice", got, err)
	}

	tests := []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{name: "crafted in plain JSON", data: func(t *testing.T) []byte {
			// A kept version of an image no source declares, the declared
			// one marked bad: restored at once if it were believed.
			evil := decodePod(t, strings.Replace(secretPodFmt, "example.org/app:%s", "evil.example/miner:latest", 1)).Manifest
			declared := decodePod(t, strings.Replace(secretPodFmt, "%s", "1", 1)).Manifest
			doc := map[string]any{"pods": map[string]any{"web": map[string]any{
				"rollout": map[string]any{"state": "RolledBack"},
				"good":    map[string]any{"hash": manifest.PodHash(evil), "manifest": evil},
				"bad":     map[string]any{"hash": manifest.PodHash(declared), "reason": "x"},
			}}}
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}},
		{name: "cut short", data: func(*testing.T) []byte { return b[:len(b)/2] }},
		{name: "sealed with another key", data: func(*testing.T) []byte {
			other := newRolloutEnv(t, nil)
			other.set(decodePod(t, strings.Replace(secretPodFmt, "%s", "1", 1)))
			other.sync(0)
			other.complete("web", "example.org/app:1")
			ob, err := os.ReadFile(filepath.Join(other.dir, hsync.RolloutsFile))
			if err != nil {
				t.Fatal(err)
			}
			return ob
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(rollouts, tt.data(t), 0o600); err != nil {
				t.Fatal(err)
			}
			e.start()
			e.set(decodePod(t, strings.Replace(secretPodFmt, "%s", "1", 1)), e.pod("db", "r2", "example.org/db:2", "Auto", ""))
			e.sync(time.Second)
			if c := e.app("web"); c.Image != "example.org/app:1" {
				t.Fatalf("web runs %s, want the declared app:1", c.Image)
			}
			if c := e.app("db"); c.Image != "example.org/db:1" {
				t.Fatalf("held db runs %s after the rollouts were lost, want db:1 (the hold kept)", c.Image)
			}
			kept, _ := filepath.Glob(rollouts + ".corrupt-*")
			if len(kept) == 0 {
				t.Fatalf("the damaged %s was not set aside", hsync.RolloutsFile)
			}
		})
	}
}

// TestHeldPodNotRestartedByItsProbe: a liveness probe failing on a held
// pod restarts nothing.
func TestHeldPodNotRestartedByItsProbe(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	c := e.app("web")
	if _, err := e.s.Hold(e.ctx, "web", "alice", ""); err != nil {
		t.Fatal(err)
	}
	e.fake.Reset()
	e.s.OnUnhealthy(e.ctx, "web", "app", c.ID)
	if calls := e.fake.Calls(); len(calls) != 0 {
		t.Fatalf("a held pod's failed probe made engine calls %v, want none", calls)
	}
}

// TestLostKeyKeepsBadVersionHeldBack: with env-hash.key lost, the sealed
// last ready versions cannot be read, but the version held back stays
// held back (kept apart): what runs is left as it is, and the status
// says why.
func TestLostKeyKeepsBadVersionHeldBack(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	e.complete("web", "example.org/app:1")
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	e.crash("web", 3)
	e.sync(time.Second)
	e.sync(time.Second)
	e.want("rolled back", "web", hsync.RolloutRolledBack, "keeps crashing", "example.org/app:1")
	if err := os.Remove(filepath.Join(e.dir, hsync.EnvKeyFile)); err != nil {
		t.Fatal(err)
	}
	e.start()
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	e.sync(time.Minute)
	e.want("key lost", "web", hsync.RolloutRolledBack, "the last ready version is not known", "example.org/app:1")
}

// TestHoldSavedWhenRolloutsAreNot: a hold is taken and saved when the
// rollouts file cannot be written (a full disk spares the small holds
// file): the hold stands on the holds file alone.
func TestHoldSavedWhenRolloutsAreNot(t *testing.T) {
	e := newRolloutEnv(t, nil)
	e.set(e.pod("web", "r1", "example.org/app:1", "Auto", ""))
	e.sync(0)
	rollouts := filepath.Join(e.dir, hsync.RolloutsFile)
	if err := os.RemoveAll(rollouts); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(rollouts, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := e.s.Hold(e.ctx, "web", "alice", "incident"); err != nil {
		t.Fatalf("Hold with an unwritable rollouts file: %v, want it taken", err)
	}
	got, _ := hsync.ReadRollouts(e.dir)
	if got["web"].State != hsync.RolloutHeld {
		t.Fatalf("saved: %+v, want web held", got)
	}
	e.set(e.pod("web", "r2", "example.org/app:2", "Auto", ""))
	e.sync(time.Second)
	e.want("held", "web", hsync.RolloutHeld, "incident", "example.org/app:1")
	if err := e.s.Release("web"); err != nil {
		t.Fatalf("Release with an unwritable rollouts file: %v", err)
	}
	if got, _ := hsync.ReadRollouts(e.dir); got["web"].State == hsync.RolloutHeld {
		t.Fatalf("saved after the release: %+v, want web not held", got)
	}
}

// TestReadRolloutsKeepsHolds: diff's reading of a host's files gives the
// holds also when the rollouts cannot be opened (no key).
func TestReadRolloutsKeepsHolds(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, hsync.RolloutsFile), []byte("hostlet-sealed-v1\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"), 0o600); err != nil {
		t.Fatal(err)
	}
	holds := `{"pods": {"web": {"by": "alice", "reason": "x", "since": "2026-12-05T14:00:00Z"}}, "heldBack": {"api": {"hash": "v1:ab", "revision": "r2", "reason": "crash", "at": "2026-12-05T13:00:00Z"}}}`
	if err := os.WriteFile(filepath.Join(dir, hsync.HoldsFile), []byte(holds), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := hsync.ReadRollouts(dir)
	if err == nil || got["web"].State != hsync.RolloutHeld || got["api"].State != hsync.RolloutRolledBack || got["api"].Hash != "v1:ab" {
		t.Fatalf("ReadRollouts: %+v, %v; want web held, api held back, and the rollouts' error", got, err)
	}
}
