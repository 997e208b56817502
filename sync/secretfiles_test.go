package sync_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/filestore"
	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// kubeSecretFilesPod is a pod translated from Kubernetes objects that
// mounts Secret db, encrypted in place in secret.yaml, as files: key
// password (a data value: a base64 part of its token) and key user (a
// stringData value: its token), beside a plain ConfigMap's file.
func kubeSecretFilesPod(password, user string) manifest.Manifest {
	items := []manifest.FileItem{
		{Path: "password", Data: []byte(manifest.Base64Part(password)), Mode: 0o400, Sealed: "secret.yaml"},
		{Path: "user", Data: []byte(user), Sealed: "secret.yaml"},
		{Path: "level", Data: []byte("info")},
	}
	return manifest.Manifest{Version: manifest.Version, ID: "db-reader",
		Object:     &manifest.ObjectRef{Kind: "Pod", Name: "db-reader"},
		Sealed:     []*manifest.Sealed{{File: "secret.yaml", Format: "yaml", Data: []byte("ciphertext")}},
		Volumes:    []manifest.Volume{{Name: "db", Files: manifest.NewFiles("secret db", true, items)}},
		Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1", VolumeMounts: []manifest.VolumeMount{{Name: "db", MountPath: "/etc/db", ReadOnly: true}}}}}
}

// The keys of a Kubernetes Secret encrypted in place, mounted as files,
// are written with their plaintext (a data value decoded from base64) to
// the secrets' store only, never to the files volumes under stateDir.
func TestSecretKeysAsFilesAreWrittenDecodedToTheSecretsStoreOnly(t *testing.T) {
	dir := t.TempDir()
	secretDir := filepath.Join(t.TempDir(), "run")
	pwTok, userTok := manifest.SecretToken("secret.yaml", strings.Repeat("1", 32)), manifest.SecretToken("secret.yaml", strings.Repeat("2", 32))
	reveal := func(ctx context.Context, source string, sealed []*manifest.Sealed) (map[string][]byte, error) {
		return map[string][]byte{pwTok: []byte("czNjcmV0LXB3"), userTok: []byte("s3cret-user")}, nil
	}
	fake := synctest.NewFake()
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second, Concurrency: 4, Prune: true,
		StateDir: dir, Files: filestore.New(filepath.Join(dir, "files")), Secrets: reveal, SecretFiles: filestore.New(secretDir),
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{hsync.NewPod(kubeSecretFilesPod(pwTok, userTok), "test", "rev1")}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	src := specsOf(t, fake, "db-reader")["app"].Mounts[0].Source
	if !strings.HasPrefix(src, secretDir+"/") {
		t.Fatalf("mounted from %s, want the secrets' store %s", src, secretDir)
	}
	for name, want := range map[string]string{"password": "s3cret-pw", "user": "s3cret-user", "level": "info"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(src, "password")); err != nil || fi.Mode().Perm() != 0o400 {
		t.Errorf("password's mode %v, %v; want 0400", fi.Mode(), err)
	}
	noPlaintextUnder(t, dir, "s3cret-pw", "czNjcmV0LXB3", "s3cret-user")
}

// noPlaintextUnder fails when a file under dir holds one of values.
func noPlaintextUnder(t *testing.T, dir string, values ...string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		for _, v := range values {
			if err == nil && strings.Contains(string(b), v) {
				t.Errorf("%s holds a secret's plaintext", p)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
