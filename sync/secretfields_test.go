package sync_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/filestore"
	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// secretEnvSyncer is a syncer on fake whose secrets reveal plain.
func secretEnvSyncer(t *testing.T, fake *synctest.Fake, plain map[string][]byte) *hsync.Syncer {
	dir := t.TempDir()
	reveal := func(ctx context.Context, source string, sealed []*manifest.Sealed) (map[string][]byte, error) {
		return plain, nil
	}
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second, Concurrency: 4, Prune: true,
		StateDir: dir, Files: filestore.New(filepath.Join(dir, "files")), Secrets: reveal, SecretFiles: filestore.New(filepath.Join(t.TempDir(), "run")),
		HostAddress: func(context.Context) (string, error) { return "192.0.2.2", nil },
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// secretEnvPod is a pod whose env PASSWORD is value, of one sealed file.
func secretEnvPod(value string) manifest.Manifest {
	return manifest.Manifest{Version: manifest.Version, ID: "app",
		Sealed:     []*manifest.Sealed{{File: "secret.yaml", Format: "yaml", Data: []byte("ciphertext")}},
		Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1", Env: []manifest.EnvVar{{Name: "PASSWORD", Value: value}}}}}
}

// A secret's plaintext reaches the container as it is: a field token in
// it is text, not read for the pod's fields.
func TestASecretPlaintextIsNeverReadForFieldTokens(t *testing.T) {
	tok := manifest.SecretToken("secret.yaml", strings.Repeat("1", 32))
	fake := synctest.NewFake()
	s := secretEnvSyncer(t, fake, map[string][]byte{tok: []byte("pre{{hostlet-field:status.hostIP}}post")})
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{hsync.NewPod(secretEnvPod(tok), "test", "rev1")}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	env := specsOf(t, fake, "app")["app"].Env
	if !slices.Contains(env, "PASSWORD=pre{{hostlet-field:status.hostIP}}post") {
		t.Errorf("the secret's plaintext was changed before it reached the container: %v", env)
	}
}

// Nothing of a secret's plaintext shows in the sync's error or the
// status, whatever it holds (a data value's decoded form too).
func TestASecretPlaintextHoldingTokensNeverShows(t *testing.T) {
	for name, c := range map[string]struct{ value, plain string }{
		"stringData": {"%s", "pw{{hostlet-field:Tr0ub4dor-and-3}}x"},
		"data":       {"{{hostlet-base64:%s}}", "cHd7e2hvc3RsZXQtZmllbGQ6VHIwdWI0ZG9yLWFuZC0zfX14"}, // base64 of the same
	} {
		t.Run(name, func(t *testing.T) {
			tok := manifest.SecretToken("secret.yaml", strings.Repeat("1", 32))
			fake := synctest.NewFake()
			s := secretEnvSyncer(t, fake, map[string][]byte{tok: []byte(c.plain)})
			value := strings.Replace(c.value, "%s", tok, 1)
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{hsync.NewPod(secretEnvPod(value), "test", "rev1")}, Ready: true})
			err := s.SyncOnce(t.Context())
			b, _ := json.Marshal(s.Report())
			if strings.Contains(string(b), "Tr0ub4dor") {
				t.Errorf("the status report shows the secret's plaintext")
			}
			if err != nil && strings.Contains(err.Error(), "Tr0ub4dor") {
				t.Errorf("the sync error shows the secret's plaintext")
			}
		})
	}
}
