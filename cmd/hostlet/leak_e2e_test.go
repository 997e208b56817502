package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	hsync "github.com/hostlet/hostlet/sync"
)

// leakSecret is a random value with a prefix that says what it is.
func leakSecret(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// leakLog keeps every line the agent logs (debug level), and copies it to
// the test's output while the test runs.
type leakLog struct {
	mu   gosync.Mutex
	buf  bytes.Buffer
	out  io.Writer
	done bool
}

func (l *leakLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.done {
		_, _ = l.out.Write(p)
	}
	return len(p), nil
}

func (l *leakLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// headerLog records the headers of every request a server answers.
type headerLog struct {
	mu   gosync.Mutex
	seen []string
}

func (h *headerLog) add(r *http.Request) {
	var b strings.Builder
	_ = r.Header.Write(&b)
	h.mu.Lock()
	h.seen = append(h.seen, r.Method+" "+r.URL.String()+"\n"+b.String())
	h.mu.Unlock()
}

func (h *headerLog) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.seen, "\n")
}

// TestNoSecretLeaks is the leak test of issue 12. It plants random
// secrets: an env value (in pods from git and from HTTP), a git token used
// as a URL's user name, a git password in another URL, an HTTP source's
// header secret and a token as its URL's user name, and the API token. It
// runs hostlet (in this process) on the real engine with git (smart HTTP)
// and HTTP sources, including failing ones (a missing repository, a server
// that refuses connections, a redirect to another host), reporting to
// etcd, and then searches every log line, /status, /events, /metrics,
// /pods/{id}, /stats, /healthz, every file under stateDir (binary ones
// included), every key and value in etcd, what the redirect's other host
// was sent, and the output of `validate -o json`, `diff -o json` (against
// the engine and against the status), their text forms and `status -o
// json`: none holds a secret in any spelling (raw, URL-escaped, as basic
// auth, or as the unkeyed hash older releases showed for env values).
func TestNoSecretLeaks(t *testing.T) {
	instance := dockertest.Instance(t)
	image := dockertest.TestImage(t)
	docker := dockertest.Client(t)
	etcd := etcdtest.Start(t)

	envSecret := leakSecret(t, "envval-")
	gitToken := leakSecret(t, "ghp_")
	gitPassword := leakSecret(t, "gitpw-")
	headerSecret := leakSecret(t, "hdr-")
	httpToken := leakSecret(t, "httptok-")
	apiToken := leakSecret(t, "apitok-")

	podWithEnv := func(id string) string {
		return podYAML(id, image) + fmt.Sprintf("    env:\n      - {name: SECRET, value: %q}\n      - {name: MODE, value: prod}\n", envSecret)
	}

	// Git: one repository behind a token used as the URL's user name, one
	// behind a user and password in the URL.
	repoU := gittest.NewRepo(t)
	srvU := gittest.Serve(t, repoU.Root, gitToken, "")
	repoU.Change("pods", map[string]string{"manifests/gitu.yaml": podWithEnv("gitu")})
	repoP := gittest.NewRepo(t)
	srvP := gittest.Serve(t, repoP.Root, "ops", gitPassword)
	repoP.Change("pods", map[string]string{"manifests/gitp.yaml": podWithEnv("gitp")})
	hostOf := func(s *gittest.Server) string { return strings.TrimPrefix(s.URL(), "http://") }
	gitURLToken := "http://" + gitToken + "@" + hostOf(srvU) + "/" + repoU.Name
	gitURLPassword := "http://" + url.UserPassword("ops", gitPassword).String() + "@" + hostOf(srvP) + "/" + repoP.Name
	gitURLMissing := "http://" + gitToken + "@" + hostOf(srvU) + "/nope.git"

	// HTTP: a server that wants the header and the URL's token; /moved
	// redirects to another host (localhost, another port), which records
	// what it is sent.
	var elsewhereSaw headerLog
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereSaw.add(r)
		_, _ = w.Write([]byte(podYAML("moved", image)))
	}))
	t.Cleanup(elsewhere.Close)
	_, elsewherePort, _ := net.SplitHostPort(elsewhere.Listener.Addr().String())
	var cmdbAuthorized gosync.Map
	cmdb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		if r.Header.Get("X-Api-Key") != headerSecret || user != httpToken {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		cmdbAuthorized.Store(r.URL.Path, true)
		switch r.URL.Path {
		case "/hosts/leak":
			_, _ = w.Write([]byte(podWithEnv("web")))
		case "/moved":
			http.Redirect(w, r, "http://localhost:"+elsewherePort+"/m", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(cmdb.Close)
	cmdbHost := strings.TrimPrefix(cmdb.URL, "http://")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	stateDir := filepath.Join(t.TempDir(), "state")
	cfgDir := t.TempDir()
	tokenFile := writeFile(t, cfgDir, "token", apiToken+"\n")
	// hostlet run refuses a token file other users can read.
	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	listen := fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t))
	header := fmt.Sprintf("{X-Api-Key: %q}", headerSecret)
	cfgFile := writeFile(t, cfgDir, "hostlet.yaml", fmt.Sprintf(`hostname: leak-host
instance: %s
stateDir: %s
listen: %s
tokenFile: %s
log: {level: debug}
docker:
  infraImage: %s
sync:
  interval: 1s
etcd:
  endpoints: [%s]
  prefix: /hostlet-leak
sources:
  - {name: gitu, type: git, url: %q, path: manifests, interval: 1s}
  - {name: gitp, type: git, url: %q, path: manifests, interval: 1s}
  - {name: gitmissing, type: git, url: %q, interval: 1s}
  - {name: web, type: http, url: %q, headers: %s, interval: 1s}
  - {name: moved, type: http, url: %q, headers: %s, interval: 1s}
  - {name: down, type: http, url: %q, headers: %s, interval: 1s}
`, instance, stateDir, listen, tokenFile, image, etcd.Endpoint,
		gitURLToken, gitURLPassword, gitURLMissing,
		"http://"+httpToken+"@"+cmdbHost+"/hosts/leak", header,
		"http://"+httpToken+"@"+cmdbHost+"/moved", header,
		"http://"+httpToken+"@"+closedAddr+"/x", header))
	cfg, err := config.Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}

	logs := &leakLog{out: t.Output()}
	t.Cleanup(func() {
		logs.mu.Lock()
		logs.done = true
		logs.mu.Unlock()
	})
	a := agenttest.Start(t, cfg, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	pods := []string{"gitp", "gitu", "moved", "web"}
	doc := a.WaitStatus(t, 2*time.Minute, func(d api.Document) (bool, string) {
		for _, id := range pods {
			p, ok := findPodStatus(d, id)
			if !ok || p.Phase != "Running" {
				return false, fmt.Sprintf("pod %s: %s", id, p.Phase)
			}
		}
		for _, name := range []string{"gitmissing", "down"} {
			if s := sourceError(d, name); s == "" {
				return false, "no error yet for source " + name
			}
		}
		return true, ""
	})
	// The secrets are live, or the test would prove nothing: the
	// containers have the env value, the servers took the credentials.
	for _, id := range []string{"gitu", "gitp", "web"} {
		p, _ := findPodStatus(doc, id)
		if env := inspectEnv(t, docker, p.Containers[0].ContainerID); !slices.Contains(env, "SECRET="+envSecret) {
			t.Fatalf("pod %s: container env %q lacks the secret", id, env)
		}
	}
	if srvU.Counts().InfoRefs == 0 || srvP.Counts().InfoRefs == 0 {
		t.Fatalf("the git servers were not asked: %+v %+v", srvU.Counts(), srvP.Counts())
	}
	for _, p := range []string{"/hosts/leak", "/moved"} {
		if _, ok := cmdbAuthorized.Load(p); !ok {
			t.Fatalf("the HTTP server never took the header and token for %s", p)
		}
	}
	// A POST with the API token, and a failed one.
	if code, body := postWithToken(t, a.URL("/sync"), apiToken); code/100 != 2 {
		t.Fatalf("POST /sync with the token: %d %s", code, body)
	}
	_, _ = postWithToken(t, a.URL("/sync"), apiToken+"x")
	// The status in etcd is current.
	cli := etcd.Client(t)
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		all := etcdEverything(t, cli)
		for k, v := range all {
			if strings.Contains(k, "leak-host") && strings.Contains(v, "gitmissing") && strings.Contains(v, "\"moved\"") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no status of leak-host with every source in etcd (%d keys)", len(all))
	})

	outputs := map[string]string{}
	for _, p := range []string{"/status", "/events", "/metrics", "/stats", "/healthz"} {
		outputs["GET "+p] = getBody(t, a.URL(p))
	}
	for _, id := range pods {
		outputs["GET /pods/"+id] = getBody(t, a.URL("/pods/"+id))
		outputs["GET /stats/"+id+"/app"] = getBody(t, a.URL("/stats/"+id+"/app"))
	}
	// The commands, in this process, with the host's config.
	for _, args := range [][]string{
		{"validate", "--config", cfgFile, "-o", "json"},
		{"validate", "--config", cfgFile},
		{"diff", "--config", cfgFile, "-o", "json"},
		{"diff", "--config", cfgFile},
		{"diff", "--config", cfgFile, "--against", "status", "-o", "json"},
		{"status", "--config", cfgFile, "-o", "json"},
	} {
		r := runCLI(t, args...)
		outputs["hostlet "+strings.Join(args, " ")] = fmt.Sprintf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The source errors reached the outputs (with the URLs they name).
	if !strings.Contains(outputs["GET /status"], "nope.git") || !strings.Contains(outputs["GET /status"], closedAddr) {
		t.Errorf("/status lacks the failing sources' errors:\n%s", outputs["GET /status"])
	}
	if !strings.Contains(outputs["hostlet validate --config "+cfgFile+" -o json"], "nope.git") {
		t.Errorf("validate -o json lacks the missing repository's error")
	}
	if elsewhereSaw.String() == "" {
		t.Error("the redirect's other host was never asked")
	}
	a.Stop()
	outputs["the log"] = logs.String()
	outputs["what the redirect's other host was sent"] = elsewhereSaw.String()
	for k, v := range etcdEverything(t, cli) {
		outputs["etcd key "+k] = k + "\n" + v
	}
	files := 0
	err = filepath.WalkDir(stateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		outputs["file "+p] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	secrets := map[string]string{
		"the env value": envSecret, "the git token (URL user name)": gitToken, "the git password": gitPassword,
		"the HTTP header secret": headerSecret, "the HTTP token (URL user name)": httpToken, "the API token": apiToken,
	}
	forms := map[string]string{}
	for what, s := range secrets {
		forms[s] = what
		forms[url.QueryEscape(s)] = what
		forms[url.PathEscape(s)] = what
	}
	for _, basic := range []string{gitToken + ":", "ops:" + gitPassword, httpToken + ":"} {
		forms[base64.StdEncoding.EncodeToString([]byte(basic))] = "basic auth " + basic[:4] + "…"
	}
	old := sha256.Sum256([]byte("SECRET=" + envSecret))
	forms[hex.EncodeToString(old[:])[:16]] = "the env value's unkeyed hash (older releases)"
	// The last good sets (stateDir/sources/NAME.json) hold the manifests
	// as delivered, env values included, sealed with stateDir/state.key:
	// no file under stateDir holds a secret in plain text.
	bytesSearched := 0
	for where, out := range outputs {
		bytesSearched += len(out)
		for form, what := range forms {
			if !strings.Contains(out, form) {
				continue
			}
			t.Errorf("%s found in %s:\n%s", what, where, clip(out, form))
		}
	}
	t.Logf("searched %d outputs (%d files under stateDir, %d bytes in all) for %d spellings of %d secrets",
		len(outputs), files, bytesSearched, len(forms), len(secrets))
}

// clip shows the text around the first occurrence of s.
func clip(text, s string) string {
	i := strings.Index(text, s)
	lo, hi := max(0, i-200), min(len(text), i+len(s)+200)
	return text[lo:hi]
}

func findPodStatus(doc api.Document, id string) (hsync.PodStatus, bool) {
	for _, p := range doc.Pods {
		if p.ID == id {
			return p, true
		}
	}
	return hsync.PodStatus{}, false
}

func sourceError(doc api.Document, name string) string {
	for _, s := range doc.Sources {
		if s.Name == name {
			return s.Error
		}
	}
	return ""
}

func inspectEnv(t *testing.T, docker *client.Client, id string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	info, err := docker.ContainerInspect(ctx, id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return info.Config.Env
}

func getBody(t *testing.T, u string) string {
	t.Helper()
	code, body, err := testkit.HTTP(http.MethodGet, u, "")
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return fmt.Sprintf("%d\n%s", code, body)
}

func postWithToken(t *testing.T, u, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func etcdEverything(t *testing.T, cli *clientv3.Client) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, "", clientv3.WithFromKey())
	if err != nil {
		t.Fatalf("etcd get everything: %v", err)
	}
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}
