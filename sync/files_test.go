package sync_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/filestore"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// failingStore is a file store whose writes fail while full is set.
type failingStore struct {
	*filestore.Store
	full bool
}

func (f *failingStore) Materialise(ctx context.Context, name string, fs *manifest.Files) (string, error) {
	if f.full {
		return "", &os.PathError{Op: "write", Path: f.Dir(), Err: syscall.ENOSPC}
	}
	return f.Store.Materialise(ctx, name, fs)
}

func filesSyncer(t *testing.T, rt hsync.FullRuntime) (*hsync.Syncer, *failingStore) {
	t.Helper()
	dir := t.TempDir()
	store := &failingStore{Store: filestore.New(filepath.Join(dir, "files"))}
	s, err := hsync.New(rt, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second,
		Concurrency: 4, Prune: true, StateDir: dir, Files: store,
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	return s, store
}

// filesPod is a pod whose container app mounts conf/app.conf with conf,
// and whose container side mounts nothing.
func filesPod(t *testing.T, id, conf string) hsync.Pod {
	return decodePod(t, `
version: v1beta1
id: `+id+`
volumes:
  - name: conf
    files: {source: conf/app.conf, items: [{data: `+base64.StdEncoding.EncodeToString([]byte(conf))+`}]}
containers:
  - name: app
    image: example.org/app:1
    volumeMounts: [{name: conf, mountPath: /etc/app.conf, readOnly: true}]
  - name: side
    image: example.org/side:1
`)
}

func idsOf(t *testing.T, fake *synctest.Fake, pod string) map[string]string {
	t.Helper()
	list, _ := fake.List(t.Context())
	out := map[string]string{}
	for _, c := range list {
		if c.Pod() == pod {
			out[c.Slot()] = c.ID
		}
	}
	return out
}

func TestFilesVolumes(t *testing.T) {
	fake := synctest.NewFake()
	s, store := filesSyncer(t, fake)
	sync := func(pods ...hsync.Pod) {
		t.Helper()
		s.SetDesired(hsync.Desired{Pods: pods, Ready: true})
		if err := s.SyncOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	sync(filesPod(t, "web", "listen 80\n"))
	spec := specsOf(t, fake, "web")["app"]
	if len(spec.Mounts) != 1 {
		t.Fatalf("mounts %+v", spec.Mounts)
	}
	m := spec.Mounts[0]
	if m.Type != hruntime.MountBind || !m.ReadOnly || m.Target != "/etc/app.conf" || filepath.Dir(m.Source) != store.Dir() {
		t.Fatalf("mount %+v: want a read-only bind of a copy in %s", m, store.Dir())
	}
	if data, err := os.ReadFile(m.Source); err != nil || string(data) != "listen 80\n" {
		t.Fatalf("copy: %q, %v", data, err)
	}
	if spec.Labels[hsync.LabelFiles] != filepath.Base(m.Source) {
		t.Errorf("label %s = %q, want the digest", hsync.LabelFiles, spec.Labels[hsync.LabelFiles])
	}
	first := m.Source

	// The status shows the volume, never its content.
	b, _ := json.Marshal(s.Report())
	if strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte("listen 80\n"))) || strings.Contains(string(b), "listen 80") {
		t.Errorf("the status shows the file's content: %s", b)
	}

	// A changed file recreates the container that mounts it, and no other,
	// saying which file changed; the old copy goes once nothing uses it.
	before := idsOf(t, fake, "web")
	sync(filesPod(t, "web", "listen 81\n"))
	after := idsOf(t, fake, "web")
	if after["app"] == before["app"] {
		t.Error("app not recreated for its changed file")
	}
	if after["side"] != before["side"] || after[hruntime.InfraName] != before[hruntime.InfraName] {
		t.Errorf("what does not mount the file was recreated: %v -> %v", before, after)
	}
	var pod hsync.PodStatus
	for _, p := range s.Report().Pods {
		if p.ID == "web" {
			pod = p
		}
	}
	if pod.LastAction == nil || !strings.Contains(pod.LastAction.Reason, "file conf/app.conf changed") {
		t.Errorf("last action %+v, want the file named", pod.LastAction)
	}
	if _, err := os.Stat(first); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old copy is still there (%v)", err)
	}

	// A disk too full for the new copy stops nothing: the pod fails
	// with FilesNotWritten and the running version keeps running.
	store.full = true
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{filesPod(t, "web", "listen 82\n")}, Ready: true})
	if err := s.SyncOnce(t.Context()); err == nil {
		t.Fatal("a sync that could not write the files succeeded")
	}
	if now := idsOf(t, fake, "web"); !maps.Equal(now, after) {
		t.Errorf("containers changed while the files could not be written: %v -> %v", after, now)
	}
	for _, p := range s.Report().Pods {
		if p.ID == "web" && p.Reason != hsync.ReasonFiles {
			t.Errorf("reason %q, want %s", p.Reason, hsync.ReasonFiles)
		}
	}
	store.full = false

	// The pod goes: so does its copy.
	sync()
	if got, _ := store.Names(); len(got) != 0 {
		t.Errorf("copies left after the pod went: %v", got)
	}
}

// A copy is kept while a container that mounts it is left in place (a pod
// no source declares, left running without prune).
func TestFilesKeptForContainersLeftRunning(t *testing.T) {
	fake := synctest.NewFake()
	s, store := filesSyncer(t, fake)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{filesPod(t, "web", "a")}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Not ready: nothing is removed, and the copy of what runs stays.
	s.SetDesired(hsync.Desired{Ready: false})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Names(); len(got) != 1 {
		t.Errorf("copies %v, want the running container's", got)
	}
}

// TestSecretFilesNeverShowTheirUnkeyedDigest (outside review): env values
// are shown as keyed hashes so that whoever reads /status, /pods or the
// container labels cannot check a guess (EnvHasher). A secret's content is
// hashed without a key: its plain SHA-256 digest (Source and Secret left
// out, so anyone can compute it for a guess) names the copy on the host
// and is written into the io.hostlet.files label and the mount source,
// both of which GET /pods/{id} shows (engine labels and mounts). A short
// password is then found offline.
func TestSecretFilesNeverShowTheirUnkeyedDigest(t *testing.T) {
	fake := synctest.NewFake()
	s, _ := filesSyncer(t, fake)
	pod := decodePod(t, `
version: v1beta1
id: web
volumes:
  - name: tok
    files: {source: secret db_password, secret: true, items: [{data: `+base64.StdEncoding.EncodeToString([]byte("hunter2"))+`}]}
containers:
  - name: app
    image: example.org/app:1
    volumeMounts: [{name: tok, mountPath: /run/secrets/db_password, readOnly: true}]
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The attacker's guess: any source name, the guessed content.
	guess := manifest.NewFiles("anything", false, []manifest.FileItem{{Data: []byte("hunter2")}}).Digest()
	spec := specsOf(t, fake, "web")["app"]
	for k, v := range spec.Labels {
		if strings.Contains(v, guess) {
			t.Errorf("label %s holds the unkeyed SHA-256 of the secret: a guess \"hunter2\" is confirmed offline", k)
		}
	}
	for _, m := range spec.Mounts {
		if strings.Contains(m.Source, guess) {
			t.Errorf("mount source %s is named by the unkeyed SHA-256 of the secret (shown by GET /pods/{id})", m.Source)
		}
	}
	b, _ := json.Marshal(s.Report())
	if strings.Contains(string(b), guess) || strings.Contains(string(b), "hunter2") {
		t.Errorf("the status shows the secret or its unkeyed digest")
	}
}
