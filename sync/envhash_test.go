package sync_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/eventlog"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// weakValues is an attacker's dictionary; the pod's PASSWORD is one of
// them.
var weakValues = []string{"123456", "password", "hunter2", "letmein", "qwerty", "admin", "changeme", "secret"}

// unkeyedGuesses are what an attacker computes for a guessed value: every
// unkeyed hash form an env value could be shown as.
func unkeyedGuesses(name, value string) []string {
	a := sha256.Sum256([]byte(name + "=" + value))
	b := sha256.Sum256([]byte(value))
	out := []string{}
	for _, s := range [][32]byte{a, b} {
		h := hex.EncodeToString(s[:])
		out = append(out, h[:16], h)
	}
	return out
}

// shownEnv syncs one pod with env PASSWORD=hunter2 on a fake engine and
// returns what the status shows for the value, and what the container's
// io.hostlet.spec label records for it.
func shownEnv(t *testing.T, stateDir string) (status, label string) {
	t.Helper()
	rt := synctest.NewFake()
	s, err := hsync.New(rt, hsync.Options{Instance: "envhash", InfraImage: "pause:1", Interval: time.Hour, StateDir: stateDir},
		slog.New(slog.DiscardHandler), eventlog.NewLog(10))
	if err != nil {
		t.Fatal(err)
	}
	s.SetDesired(hsync.Desired{Ready: true, Pods: []hsync.Pod{decodePod(t, "version: v1beta1\nid: web\ncontainers:\n  - name: app\n    image: example.org/app:1\n    env:\n      - {name: PASSWORD, value: hunter2}\n")}})
	if err := s.SyncOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep := s.Report()
	if len(rep.Pods) != 1 || rep.Pods[0].Manifest == nil {
		t.Fatalf("report %+v", rep.Pods)
	}
	status = rep.Pods[0].Manifest.Containers[0].Env[0].Value
	cs, err := rt.List(context.Background())
	if err != nil || len(cs) != 1 {
		t.Fatalf("list: %v %v", cs, err)
	}
	var sum struct {
		Env map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(cs[0].Labels[hsync.LabelSpec]), &sum); err != nil {
		t.Fatal(err)
	}
	return status, sum.Env["PASSWORD"]
}

// TestEnvHashResistsDictionary: the hash of an env value shown in the
// status and recorded in the io.hostlet.spec label is keyed with the
// host's secret: a dictionary of weak values hashed without the key finds
// nothing, two hosts show different hashes for the same value, one host
// shows the same hash across restarts, and at least 128 bits are shown.
func TestEnvHashResistsDictionary(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	statusA, labelA := shownEnv(t, dirA)
	for _, shown := range []string{statusA, labelA} {
		for _, guess := range weakValues {
			for _, h := range unkeyedGuesses("PASSWORD", guess) {
				if strings.Contains(shown, h) {
					t.Errorf("shown hash %q is the unkeyed hash of %q: a dictionary recovers the value", shown, guess)
				}
			}
		}
		if strings.Contains(shown, "hunter2") {
			t.Errorf("shown %q holds the value", shown)
		}
		if m := regexp.MustCompile(`[0-9a-f]{32,}`).FindString(shown); m == "" {
			t.Errorf("shown hash %q has fewer than 128 bits", shown)
		}
	}
	if statusA != labelA {
		t.Errorf("status shows %q, the label records %q: want the same keyed hash", statusA, labelA)
	}
	again, _ := shownEnv(t, dirA)
	if again != statusA {
		t.Errorf("the same host shows %q after a restart, %q before: the key must persist", again, statusA)
	}
	statusB, _ := shownEnv(t, dirB)
	if statusB == statusA {
		t.Errorf("two hosts show the same hash %q for the same value: the key must be per host", statusA)
	}
}

// TestEnvHashKeyFile: the key is created once, mode 0600, and kept; a
// damaged key is moved aside and replaced, with a warning; ReadEnvHasher
// (hostlet diff) never creates one.
func TestEnvHashKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, hsync.EnvKeyFile)
	if _, err := hsync.ReadEnvHasher(dir); err == nil {
		t.Fatal("ReadEnvHasher of a stateDir without a key worked")
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("ReadEnvHasher created the key file: %v", err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h1, err := hsync.LoadEnvHasher(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	h2, err := hsync.LoadEnvHasher(dir, log)
	if err != nil || h2.Hash("A", "b") != h1.Hash("A", "b") {
		t.Fatalf("second load: %v, a different key", err)
	}
	h3, err := hsync.ReadEnvHasher(dir)
	if err != nil || h3.Hash("A", "b") != h1.Hash("A", "b") {
		t.Fatalf("ReadEnvHasher: %v, a different key", err)
	}
	if logs.Len() != 0 {
		t.Errorf("loading a good key logged %q", logs.String())
	}

	tests := []struct {
		name    string
		content string
	}{
		{name: "truncated", content: "0123abcd"},
		{name: "empty", content: ""},
		{name: "garbage", content: strings.Repeat("zz", 32)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs.Reset()
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			h, err := hsync.LoadEnvHasher(dir, log)
			if err != nil {
				t.Fatalf("load a %s key: %v", tc.name, err)
			}
			if h.Hash("A", "b") == h1.Hash("A", "b") {
				t.Error("a damaged key gave the old key's hashes")
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "env hash key") {
				t.Errorf("a damaged key was replaced without a warning: %q", logs.String())
			}
			kept, _ := filepath.Glob(path + ".corrupt-*")
			slices.Sort(kept)
			if len(kept) == 0 {
				t.Fatal("no damaged copy kept")
			}
			if b, err := os.ReadFile(kept[len(kept)-1]); err != nil || string(b) != tc.content {
				t.Errorf("damaged copy: %q, %v; want the damaged content kept", b, err)
			}
			if h2, err := hsync.ReadEnvHasher(dir); err != nil || h2.Hash("A", "b") != h.Hash("A", "b") {
				t.Errorf("the new key was not saved: %v", err)
			}
			// A Syncer reports it among its state file problems.
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := hsync.New(synctest.NewFake(), hsync.Options{Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour, StateDir: dir}, log, eventlog.NewLog(10))
			if err != nil {
				t.Fatal(err)
			}
			var problems atomicfile.Problems
			s.TrackStateFiles(&problems)
			if l := problems.List(); len(l) != 1 || l[0].File != hsync.EnvKeyFile || !strings.HasPrefix(l[0].KeptAs, hsync.EnvKeyFile+".corrupt-") {
				t.Errorf("state file problems %+v, want the env hash key's", l)
			}
		})
	}
}
