package agentrun_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/sopstest"
)

// secretEnv is one hostlet with keys, a source of encrypted files and
// the values in them.
type secretEnv struct {
	*env
	agent          *agenttest.Agent
	key, other     sopstest.Key
	tree, project  string
	runtimeDir     string
	nativePort     int
	webPort        int
	token, apiKey  string // the native pod's env; web's env_file
	dbPass, dbFile string // web's .env (interpolated), its secrets: file
	iniValue       string // web's bind-mounted INI file
	proj           string
}

func randomValue(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "s3cr3t-" + hex.EncodeToString(b)
}

func newSecretEnv(t *testing.T) *secretEnv {
	t.Helper()
	s := &secretEnv{env: newEnv(t), key: sopstest.NewKey(t), other: sopstest.NewKey(t)}
	s.tree = filepath.Join(s.dir, "tree")
	s.project = filepath.Join(s.tree, "shop")
	s.runtimeDir = filepath.Join(t.TempDir(), "run")
	testkit.MountTmpfs(t, s.runtimeDir, 8<<20)
	s.nativePort, s.webPort = testkit.FreePort(t), testkit.FreePort(t)
	s.token, s.apiKey, s.dbPass, s.dbFile, s.iniValue = randomValue(t), randomValue(t), randomValue(t), randomValue(t), randomValue(t)
	s.proj = s.instance
	return s
}

// writeEncrypted writes plain, encrypted for to, as file rel of the tree.
func (s *secretEnv) writeEncrypted(t *testing.T, rel, plain string, to []string, args ...string) {
	t.Helper()
	testkit.WriteFile(t, filepath.Join(s.tree, rel), string(sopstest.Encrypt(t, rel, []byte(plain), to, args...)))
}

func (s *secretEnv) nativeManifest(token string) string {
	return fmt.Sprintf("version: v1beta1\nid: sec-native\nterminationGracePeriodSeconds: 1\ncontainers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    env:\n      - name: TOKEN\n        value: %s\n    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]\n", s.image, token, s.nativePort)
}

func (s *secretEnv) composeFile() string {
	return fmt.Sprintf(`name: %s
services:
  web:
    image: %s
    pull_policy: never
    restart: always
    stop_grace_period: 1s
    ports: ["127.0.0.1:%d:8080"]
    env_file: [app.env]
    environment:
      DB_URL: "postgres://u:${DB_PASS}@db/x"
    secrets: [dbpass]
    volumes: ["./conf/app.ini:/etc/app.ini:ro"]
secrets:
  dbpass: {file: ./dbpass.txt}
`, s.proj, s.image, s.webPort)
}

// writeAll writes the whole tree, every secret encrypted for the host.
func (s *secretEnv) writeAll(t *testing.T) {
	t.Helper()
	to := []string{s.key.Recipient}
	s.writeEncrypted(t, "native.yaml", s.nativeManifest(s.token), to, "--encrypted-regex", "^value$")
	testkit.WriteFile(t, filepath.Join(s.project, "compose.yaml"), s.composeFile())
	s.writeEncrypted(t, "shop/app.env", "API_KEY="+s.apiKey+"\n", to)
	s.writeEncrypted(t, "shop/.env", "DB_PASS="+s.dbPass+"\n", to)
	s.writeEncrypted(t, "shop/dbpass.txt", s.dbFile, to)
	s.writeEncrypted(t, "shop/conf/app.ini", "[app]\nkey = "+s.iniValue+"\n", to)
}

func (s *secretEnv) config(t *testing.T) string {
	return fmt.Sprintf("secrets:\n  ageKeyFile: %s\n  runtimeDir: %s\n  helper: %s\ncompose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n",
		s.key.File, s.runtimeDir, sopstest.Helper(t), composetest.Helper(t), s.tree)
}

// get is the demo's answer to GET path on port, "" until it answers 200.
func get(port int, path string) string {
	code, body, err := testkit.HTTP("GET", fmt.Sprintf("http://127.0.0.1:%d%s", port, path), "")
	if err != nil || code != 200 {
		return ""
	}
	return body
}

// waitAnswer waits until GET path on port answers want.
func waitAnswer(t *testing.T, port int, path, want string) {
	t.Helper()
	testkit.WaitFor(t, 90*time.Second, func() (bool, string) {
		got := get(port, path)
		return strings.TrimSpace(got) == want, fmt.Sprintf("GET :%d%s = %q", port, path, got)
	})
}

// TestSecretsReachContainersOnly: SOPS-encrypted files of a file source —
// a native manifest encrypted in place, a Compose env_file, a .env used
// for interpolation, a secrets: file and a bind-mounted INI file — reach
// the containers (read back from inside), the mounted ones from a tmpfs;
// no plaintext is in stateDir. Encrypted again with the same plaintext,
// nothing is recreated; a changed plaintext recreates exactly its pod; a
// file this host's key does not open keeps the pod running what it ran,
// with the error in /status, while another pod of the source updates; a
// file changed after it was encrypted is refused by name, its pod running
// on; removed, a pod's decrypted files leave the tmpfs.
func TestSecretsReachContainersOnly(t *testing.T) {
	s := newSecretEnv(t)
	s.writeAll(t)
	s.agent = s.start(t, s.env.config(t, s.config(t)))
	s.waitPods(t, 90*time.Second, "sec-native", s.proj+"-web")
	s.checkValues(t)
	s.checkMountsInMemory(t)
	s.checkNoPlaintextIn(t, s.stateDir)

	before := s.containers(t)
	// Encrypted again: new data keys, the same plaintext.
	s.writeAll(t)
	s.waitSyncedAfterRevision(t)
	if after := s.containers(t); !sameIDs(before, after) {
		t.Fatalf("re-encrypting recreated containers:\nbefore %v\nafter  %v", before, after)
	}

	// A changed plaintext recreates exactly its pod.
	s.dbPass = randomValue(t)
	s.writeEncrypted(t, "shop/.env", "DB_PASS="+s.dbPass+"\n", []string{s.key.Recipient})
	waitAnswer(t, s.webPort, "/env?name=DB_URL", "postgres://u:"+s.dbPass+"@db/x")
	after := s.containers(t)
	if idOf(after, "sec-native") != idOf(before, "sec-native") || idOf(after, s.proj+"-web") == idOf(before, s.proj+"-web") {
		t.Errorf("a changed .env: native %s -> %s, web %s -> %s; want web alone recreated",
			idOf(before, "sec-native"), idOf(after, "sec-native"), idOf(before, s.proj+"-web"), idOf(after, s.proj+"-web"))
	}
	s.checkWrongKeyKeepsThePod(t)
	s.checkTamperedIsRefused(t)
	s.checkNoPlaintextIn(t, s.stateDir)

	s.checkRebootRewritesFiles(t)

	// Removed: the project's decrypted files leave the tmpfs.
	if err := os.RemoveAll(s.project); err != nil {
		t.Fatal(err)
	}
	s.waitPods(t, 60*time.Second, "sec-native")
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		n := countFiles(t, s.runtimeDir)
		return n == 0, fmt.Sprintf("%d decrypted files left in %s", n, s.runtimeDir)
	})
}

// checkValues reads every secret back from inside its container.
func (s *secretEnv) checkValues(t *testing.T) {
	t.Helper()
	waitAnswer(t, s.nativePort, "/env?name=TOKEN", s.token)
	waitAnswer(t, s.webPort, "/env?name=API_KEY", s.apiKey)
	waitAnswer(t, s.webPort, "/env?name=DB_URL", "postgres://u:"+s.dbPass+"@db/x")
	waitAnswer(t, s.webPort, "/read?path=/run/secrets/dbpass", s.dbFile)
	waitAnswer(t, s.webPort, "/read?path=/etc/app.ini", "[app]\nkey = "+s.iniValue)
}

// checkMountsInMemory checks, from the host, that web's secret and
// config files are mounted from the tmpfs.
func (s *secretEnv) checkMountsInMemory(t *testing.T) {
	t.Helper()
	info, err := s.docker.ContainerInspect(context.Background(), idOf(s.containers(t), s.proj+"-web"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Mounts {
		if m.Destination != "/run/secrets/dbpass" && m.Destination != "/etc/app.ini" {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(m.Source, &st); err != nil {
			t.Fatalf("statfs %s: %v", m.Source, err)
		}
		if st.Type != unix.TMPFS_MAGIC || !strings.HasPrefix(m.Source, s.runtimeDir+"/") {
			t.Errorf("%s is mounted from %s (filesystem %#x), want a file of the tmpfs %s", m.Destination, m.Source, st.Type, s.runtimeDir)
		}
	}
}

// checkNoPlaintextIn fails when a file under dir holds a secret's
// plaintext. hostlet may be writing a state file meanwhile (a temporary
// file, then renamed): a walk that met a file gone before it was read
// is walked again, so every file is read under one name or the other.
func (s *secretEnv) checkNoPlaintextIn(t *testing.T, dir string) {
	t.Helper()
	values := []string{s.token, s.apiKey, s.dbPass, s.dbFile, s.iniValue}
	for walk := 1; ; walk++ {
		vanished := false
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				vanished = true
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				vanished = true
				return nil
			}
			if err != nil {
				return err
			}
			for _, v := range values {
				if bytes.Contains(b, []byte(v)) {
					t.Errorf("%s holds a secret's plaintext", p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !vanished {
			return
		}
		if walk == 20 {
			t.Fatalf("files under %s kept vanishing mid-walk (20 walks)", dir)
		}
	}
}

// waitSyncedAfterRevision waits until the source's revision changed and
// a sync ran after that.
func (s *secretEnv) waitSyncedAfterRevision(t *testing.T) {
	t.Helper()
	_, _, rev := sourceStatus(s.status(t), "local")
	var changedAt time.Time
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		doc := s.status(t)
		_, errText, now := sourceStatus(doc, "local")
		if now != rev && changedAt.IsZero() {
			changedAt = time.Now()
		}
		return !changedAt.IsZero() && syncedSince(doc, changedAt), fmt.Sprintf("revision %s (was %s), error %q", now, rev, errText)
	})
}

// checkWrongKeyKeepsThePod: the native manifest, now encrypted for
// another host only, is not decrypted: the pod runs on as it was, the
// error is in /status, and web, changed meanwhile, updates.
func (s *secretEnv) checkWrongKeyKeepsThePod(t *testing.T) {
	t.Helper()
	nativeID := idOf(s.containers(t), "sec-native")
	s.writeEncrypted(t, "native.yaml", s.nativeManifest(randomValue(t)), []string{s.other.Recipient}, "--encrypted-regex", "^value$")
	s.apiKey = randomValue(t)
	s.writeEncrypted(t, "shop/app.env", "API_KEY="+s.apiKey+"\n", []string{s.key.Recipient})
	waitAnswer(t, s.webPort, "/env?name=API_KEY", s.apiKey)
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		doc := s.status(t)
		want := "secret: cannot decrypt local:" + filepath.Join(s.tree, "native.yaml") + ": no matching age identity"
		return strings.Contains(rejectionOf(doc, "sec-native"), want), fmt.Sprintf("rejections %+v, want %q", doc.Rejected, want)
	})
	if got := idOf(s.containers(t), "sec-native"); got != nativeID {
		t.Errorf("sec-native's container %s replaced by %s", nativeID, got)
	}
	waitAnswer(t, s.nativePort, "/env?name=TOKEN", s.token)
}

// checkTamperedIsRefused: app.env with one encrypted value changed is
// refused by name (its MAC does not match); web runs on as it was.
func (s *secretEnv) checkTamperedIsRefused(t *testing.T) {
	t.Helper()
	webID := idOf(s.containers(t), s.proj+"-web")
	path := filepath.Join(s.project, "app.env")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("API_KEY=ENC[AES256_GCM,data:")) + len("API_KEY=ENC[AES256_GCM,data:")
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	testkit.WriteFile(t, path, string(b))
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		doc := s.status(t)
		want := "secret: cannot decrypt local:" + path + ": "
		got := rejectionOf(doc, s.proj+"-web")
		return strings.Contains(got, want) && strings.Contains(got, "changed after it was encrypted"), fmt.Sprintf("rejection %q, want %q ... changed after it was encrypted", got, want)
	})
	if got := idOf(s.containers(t), s.proj+"-web"); got != webID {
		t.Errorf("web's container %s replaced by %s", webID, got)
	}
	waitAnswer(t, s.webPort, "/env?name=API_KEY", s.apiKey)
}

// checkRebootRewritesFiles: the tmpfs emptied (as a reboot does) while
// web is stopped, hostlet restarts it (restart: always), writing its
// decrypted files again first.
func (s *secretEnv) checkRebootRewritesFiles(t *testing.T) {
	t.Helper()
	id := idOf(s.containers(t), s.proj+"-web")
	timeout := 1
	if err := s.docker.ContainerStop(context.Background(), id, container.StopOptions{Timeout: &timeout}); err != nil {
		t.Fatal(err)
	}
	if err := filepath.WalkDir(s.runtimeDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			return os.RemoveAll(p)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, s.webPort, "/read?path=/run/secrets/dbpass", s.dbFile)
	waitAnswer(t, s.webPort, "/env?name=API_KEY", s.apiKey)
}

func (s *secretEnv) status(t *testing.T) api.Document {
	t.Helper()
	doc, err := s.agent.Status()
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// rejectionOf is the text of pod id's rejection in doc, "" when none.
func rejectionOf(doc api.Document, id string) string {
	for _, r := range doc.Rejected {
		if r.ID == id {
			return strings.Join(r.Reasons, "; ")
		}
	}
	return ""
}

func idOf(bs []box, pod string) string {
	for _, b := range bs {
		if b.Pod == pod && b.State == "running" {
			return b.ID
		}
	}
	return ""
}

func sameIDs(a, b []box) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			return false
		}
	}
	return true
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// kubeSecretObjects are a Secret (data and stringData) and a Pod reading
// both as env, the Secret to be encrypted as Flux encrypts one.
func (s *secretEnv) kubeSecretObjects(password, user string) (secret, pod string) {
	secret = fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ntype: Opaque\ndata:\n  password: %s\nstringData:\n  user: %s\n",
		base64.StdEncoding.EncodeToString([]byte(password)), user)
	pod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
    env:
    - name: PASSWORD
      valueFrom: {secretKeyRef: {name: db, key: password}}
    - name: DSN
      value: "postgres://app:$(PASSWORD)@db/app"
    envFrom:
    - {secretRef: {name: db}, prefix: DB_}
`, s.image, s.nativePort)
	return secret, pod
}

// TestKubernetesSOPSEncryptedSecret: a Kubernetes Secret encrypted with
// sops as Flux encrypts one (data and stringData) reaches its pod's env
// decrypted, data values decoded from base64; no plaintext is in
// /status or stateDir; a changed value recreates the pod.
func TestKubernetesSOPSEncryptedSecret(t *testing.T) {
	s := newSecretEnv(t)
	password, user := randomValue(t), randomValue(t)
	secret, pod := s.kubeSecretObjects(password, user)
	regex := []string{"--encrypted-regex", "^(data|stringData)$"}
	s.writeEncrypted(t, "secret.yaml", secret, []string{s.key.Recipient}, regex...)
	testkit.WriteFile(t, filepath.Join(s.tree, "reader.yaml"), pod)
	s.agent = s.start(t, s.env.config(t, s.config(t)))
	s.waitPods(t, 90*time.Second, "reader")
	waitAnswer(t, s.nativePort, "/env?name=PASSWORD", password)
	waitAnswer(t, s.nativePort, "/env?name=DSN", "postgres://app:"+password+"@db/app")
	waitAnswer(t, s.nativePort, "/env?name=DB_password", password)
	waitAnswer(t, s.nativePort, "/env?name=DB_user", user)
	s.token, s.apiKey = password, user // checkNoPlaintextIn's values
	s.checkNoPlaintextIn(t, s.stateDir)
	raw, err := json.Marshal(s.status(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{password, user, base64.StdEncoding.EncodeToString([]byte(password))} {
		if strings.Contains(string(raw), v) {
			t.Errorf("/status holds a secret's value")
		}
	}

	password = randomValue(t)
	secret, _ = s.kubeSecretObjects(password, user)
	s.writeEncrypted(t, "secret.yaml", secret, []string{s.key.Recipient}, regex...)
	waitAnswer(t, s.nativePort, "/env?name=PASSWORD", password)
}

// kubeSecretFiles are a Secret (data and stringData) and a Pod mounting
// it as files every way a pod can (whole with defaultMode, items with a
// mode, a subPath, projected beside a ConfigMap), the Secret to be
// encrypted as Flux encrypts one; data is the password's data value as
// written (base64 of it, unless the test breaks it).
func (s *secretEnv) kubeSecretFiles(data, user string) (secret, pod string) {
	secret = fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: db}\ntype: Opaque\ndata:\n  password: %s\nstringData:\n  user: %s\n", data, user)
	pod = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: files}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: %s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %d, hostIP: 127.0.0.1}]
    volumeMounts:
    - {name: whole, mountPath: /etc/db}
    - {name: picked, mountPath: /etc/picked}
    - {name: whole, mountPath: /etc/user, subPath: user}
    - {name: mixed, mountPath: /etc/mixed}
  volumes:
  - {name: whole, secret: {secretName: db, defaultMode: 0440}}
  - {name: picked, secret: {secretName: db, items: [{key: password, path: pw/password, mode: 0400}]}}
  - {name: mixed, projected: {sources: [{secret: {name: db, items: [{key: user, path: db-user}]}}, {configMap: {name: conf}}]}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {level: info}
`, s.image, s.nativePort)
	return secret, pod
}

// checkSecretFiles waits until the pod's files hold password and user.
func (s *secretEnv) checkSecretFiles(t *testing.T, password, user string) {
	t.Helper()
	for p, want := range map[string]string{"/etc/db/password": password, "/etc/db/user": user, "/etc/picked/pw/password": password,
		"/etc/user": user, "/etc/mixed/db-user": user, "/etc/mixed/level": "info"} {
		waitAnswer(t, s.nativePort, "/read?path="+p, want)
	}
}

// checkNothingShows fails when /status, /events or GET /pods hold one of
// values.
func (s *secretEnv) checkNothingShows(t *testing.T, values ...string) {
	t.Helper()
	for _, path := range []string{"/status", "/events", "/pods"} {
		_, body, err := testkit.HTTP("GET", s.agent.URL(path), "")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if strings.Contains(body, v) {
				t.Errorf("%s holds a secret's value", path)
			}
		}
	}
}

// TestKubernetesSOPSEncryptedSecretAsFiles: a Kubernetes Secret
// encrypted with sops as Flux encrypts one, mounted as files (whole,
// items, subPath, projected), gives the container each key's plaintext
// (a data value decoded from base64), from the tmpfs; no plaintext is in
// /status, /events, /pods or stateDir; a data value that is not base64
// is refused by file, pod and field while the pod runs on; a changed
// value recreates the pod, saying which key changed.
func TestKubernetesSOPSEncryptedSecretAsFiles(t *testing.T) {
	s := newSecretEnv(t)
	password, user := randomValue(t), randomValue(t)
	regex := []string{"--encrypted-regex", "^(data|stringData)$"}
	secret, pod := s.kubeSecretFiles(base64.StdEncoding.EncodeToString([]byte(password)), user)
	s.writeEncrypted(t, "secret.yaml", secret, []string{s.key.Recipient}, regex...)
	testkit.WriteFile(t, filepath.Join(s.tree, "files.yaml"), pod)
	s.agent = s.start(t, s.env.config(t, s.config(t)))
	s.waitPods(t, 90*time.Second, "files")
	s.checkSecretFiles(t, password, user)
	info, err := s.docker.ContainerInspect(context.Background(), idOf(s.containers(t), "files"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range info.Mounts {
		if strings.HasPrefix(m.Destination, "/etc/") && !strings.HasPrefix(m.Source, s.runtimeDir+"/") {
			t.Errorf("%s is mounted from %s, want the tmpfs %s", m.Destination, m.Source, s.runtimeDir)
		}
	}
	s.token, s.apiKey = password, user // checkNoPlaintextIn's values
	s.checkNoPlaintextIn(t, s.stateDir)
	s.checkNothingShows(t, password, user, base64.StdEncoding.EncodeToString([]byte(password)))

	// A data value that is not base64: refused, the pod runs on.
	running := idOf(s.containers(t), "files")
	bad := "not-base64-" + randomValue(t)
	secret, _ = s.kubeSecretFiles(bad, user)
	s.writeEncrypted(t, "secret.yaml", secret, []string{s.key.Recipient}, regex...)
	want := fmt.Sprintf(`local:%s/files.yaml: pod "files": spec.volumes[0]: secret: volume whole: secret db: file password: its value in %s/secret.yaml: a base64 value that does not decode`, s.tree, s.tree)
	testkit.WaitFor(t, 60*time.Second, func() (bool, string) {
		got := rejectionOf(s.status(t), "files")
		return strings.Contains(got, want), fmt.Sprintf("rejection %q, want %q", got, want)
	})
	if now := idOf(s.containers(t), "files"); now != running {
		t.Errorf("the running pod was replaced (%s, was %s) by a version that was refused", now, running)
	}
	s.checkSecretFiles(t, password, user)
	s.checkNothingShows(t, bad)

	// A new value: the pod is recreated, saying which key changed.
	password = randomValue(t)
	secret, _ = s.kubeSecretFiles(base64.StdEncoding.EncodeToString([]byte(password)), user)
	s.writeEncrypted(t, "secret.yaml", secret, []string{s.key.Recipient}, regex...)
	s.checkSecretFiles(t, password, user)
	// The new container may serve before its pass has recorded it.
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		p, _ := findPod(s.status(t), "files")
		return p.LastAction != nil && p.LastAction.Action == "recreate" && strings.Contains(p.LastAction.Reason, "secret db key password changed"),
			fmt.Sprintf("last action %+v, want a recreate for \"secret db key password changed\"", p.LastAction)
	})
	s.token = password
	s.checkNoPlaintextIn(t, s.stateDir)
	s.checkNothingShows(t, password)
}
