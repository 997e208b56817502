package sync_test

// Attacks on files volumes in the syncer (outside review). A failing test
// is a finding.

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// Env values are shown as keyed hashes so that whoever reads /status,
// /pods or the container labels cannot check a guess (EnvHasher). A
// secret's content is hashed without a key: its plain SHA-256 digest
// (Source and Secret left out, so anyone can compute it for a guess)
// names the copy on the host and is written into the io.hostlet.files
// label and the mount source, both of which GET /pods/{id} shows (engine
// labels and mounts). A short password is then found offline.
func TestAttackFilesSecretDigestGuessable(t *testing.T) {
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
