package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
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

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/seal"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/agenttest"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	"github.com/hostlet/hostlet/internal/testkit/sopstest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/rollouts"
)

// sopsLeak is the world of TestSOPSSecretsNeverLeak: a git repository of
// encrypted files served over smart HTTP, etcd, a webhook receiver, and
// two hosts, each with its own key: leak-a reads the repository, leak-b
// what `hostlet publish` writes for it to etcd.
type sopsLeak struct {
	t                 *testing.T
	image             string
	repo              *gittest.Repo
	etcd              *etcdtest.Server
	keyA, keyB        sopstest.Key
	hook              *hookLog
	cfgA, cfgB        string
	stateA, stateB    string
	runA, runB        string
	secrets           map[string]string // what -> value
	envValue, dbValue string
}

// hookLog keeps every body the webhook receiver got.
type hookLog struct {
	mu     gosync.Mutex
	bodies []string
}

func (h *hookLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.bodies = append(h.bodies, string(b))
	h.mu.Unlock()
}

func (h *hookLog) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.bodies, "\n")
}

// webPod is pod web, its env value SECRET encrypted in place; crash
// makes its process exit at once (an update that rolls back).
func (l *sopsLeak) webPod(value string, crash bool) string {
	cmd := "[/demo, pause]"
	if crash {
		cmd = "[/demo, probe-fail]"
	}
	return fmt.Sprintf("version: v1beta1\nid: web\nminReadySeconds: 1\nprogressDeadlineSeconds: 30\nterminationGracePeriodSeconds: 1\ncontainers:\n  - name: app\n    image: %s\n    imagePullPolicy: Never\n    command: %s\n    env:\n      - {name: SECRET, value: %s}\n      - {name: MODE, value: prod}\n", l.image, cmd, value)
}

// commit writes each host's folder: web encrypted in place, a Compose
// project (of the host's own name: both hosts share one engine here)
// whose secret file and env_file are encrypted, each for both hosts.
func (l *sopsLeak) commit(msg string, crash bool) {
	t := l.t
	to := []string{l.keyA.Recipient, l.keyB.Recipient}
	enc := func(name, plain string, args ...string) string {
		return string(sopstest.Encrypt(t, name, []byte(plain), to, args...))
	}
	files := map[string]string{}
	for _, host := range []string{"leak", "leak-b"} {
		files["hosts/"+host+"/web.yaml"] = enc("web.yaml", l.webPod(l.envValue, crash), "--encrypted-regex", "^value$")
		files["hosts/"+host+"/shop/compose.yaml"] = fmt.Sprintf("name: %s-shop\nservices:\n  db:\n    image: %s\n    pull_policy: never\n    command: [/demo, pause]\n    stop_grace_period: 1s\n    env_file: [db.env]\n    secrets: [dbpass]\nsecrets:\n  dbpass: {file: ./dbpass.txt}\n", host, l.image)
		files["hosts/"+host+"/shop/db.env"] = enc("db.env", "DB_TOKEN="+l.secrets["the env_file value"]+"\n")
		files["hosts/"+host+"/shop/dbpass.txt"] = enc("dbpass.txt", l.dbValue)
	}
	l.repo.Change(msg, files)
}

func newSOPSLeak(t *testing.T) *sopsLeak {
	t.Helper()
	l := &sopsLeak{t: t, image: dockertest.TestImage(t), repo: gittest.NewRepo(t), etcd: etcdtest.Start(t),
		keyA: sopstest.NewKey(t), keyB: sopstest.NewKey(t), hook: &hookLog{}}
	l.envValue, l.dbValue = leakSecret(t, "sopsenv-"), leakSecret(t, "sopsfile-")
	l.secrets = map[string]string{"the env value": l.envValue, "the secret file": l.dbValue, "the env_file value": leakSecret(t, "sopsdotenv-")}
	hook := httptest.NewServer(l.hook)
	t.Cleanup(hook.Close)
	srv := gittest.Serve(t, l.repo.Root, "", "")
	dir := t.TempDir()
	l.stateA, l.stateB = filepath.Join(dir, "state-a"), filepath.Join(dir, "state-b")
	l.runA, l.runB = filepath.Join(dir, "run-a"), filepath.Join(dir, "run-b")
	testkit.MountTmpfs(t, l.runA, 8<<20)
	testkit.MountTmpfs(t, l.runB, 8<<20)
	helpers := fmt.Sprintf("compose: {helper: %s}\n", composetest.Helper(t))
	sops := sopstest.Helper(t)
	l.cfgA = writeFile(t, dir, "a.yaml", fmt.Sprintf(`hostname: leak
instance: %s
stateDir: %s
listen: 127.0.0.1:%d
log: {level: debug}
docker: {infraImage: %s}
sync: {interval: 1s}
etcd: {endpoints: [%s], prefix: /hostlet-sops}
secrets: {ageKeyFile: %s, runtimeDir: %s, helper: %s, recipients: [%s]}
notify:
  - {url: %q}
sources:
  - {name: fleet, type: git, url: %q, paths: ["hosts/{{.Hostname}}"], interval: 1s}
`, dockertest.Instance(t), l.stateA, testkit.FreePort(t), l.image, l.etcd.Endpoint, l.keyA.File, l.runA, sops, l.keyA.Recipient, hook.URL+"/hook", srv.RepoURL(l.repo))+helpers)
	l.cfgB = writeFile(t, dir, "b.yaml", fmt.Sprintf(`hostname: leak-b
instance: %s
stateDir: %s
listen: 127.0.0.1:%d
log: {level: debug}
docker: {infraImage: %s}
sync: {interval: 1s}
etcd: {endpoints: [%s], prefix: /hostlet-sops}
secrets: {ageKeyFile: %s, runtimeDir: %s, helper: %s}
sources:
  - {name: fleet, type: git, via: etcd, url: "https://git.invalid/fleet.git", paths: ["hosts/{{.Hostname}}"], interval: 1s, timeout: 2s}
`, dockertest.Instance(t), l.stateB, testkit.FreePort(t), l.image, l.etcd.Endpoint, l.keyB.File, l.runB, sops)+helpers)
	return l
}

func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// waitEnv waits until pod id of agent a runs with env SECRET=value and
// returns the status document.
func waitEnv(t *testing.T, a *agenttest.Agent, id, value string) api.Document {
	t.Helper()
	docker := dockertest.Client(t)
	return a.WaitStatus(t, 2*time.Minute, func(d api.Document) (bool, string) {
		p, ok := findPodStatus(d, id)
		if !ok || p.Phase != "Running" || len(p.Containers) == 0 || p.Containers[0].ContainerID == "" {
			return false, fmt.Sprintf("pod %s: %s", id, p.Phase)
		}
		info, err := docker.ContainerInspect(context.Background(), p.Containers[0].ContainerID)
		if err != nil {
			return false, err.Error() // replaced meanwhile
		}
		return slices.Contains(info.Config.Env, "SECRET="+value), fmt.Sprintf("pod %s env has no SECRET=%s…", id, value[:9])
	})
}

// TestSOPSSecretsNeverLeak: a random env value, env_file value and
// secret file, encrypted in a git repository, go through a host's
// create, a change, a rollback, a restart, `hostlet publish` to etcd for
// a second host that runs them with its own key, and `hostlet diff` and
// `validate -o json`. Every log line, /status, /events, /metrics, /pods,
// /stats, every file under both stateDirs (the sealed ones opened),
// every etcd key and value (published sets decompressed), what the
// webhook got and docker inspect of every container (its env aside,
// where a value is meant to be) hold none of them in any spelling.
func TestSOPSSecretsNeverLeak(t *testing.T) {
	l := newSOPSLeak(t)
	logs := &leakLog{out: t.Output()}
	t.Cleanup(func() { logs.mu.Lock(); logs.done = true; logs.mu.Unlock() })
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l.commit("v1", false)
	a := agenttest.Start(t, loadConfig(t, l.cfgA), logger)
	waitEnv(t, a, "web", l.envValue)

	// A change, then an update that fails and rolls back to it.
	l.envValue = leakSecret(t, "sopsenv2-")
	l.secrets["the changed env value"] = l.envValue
	l.commit("v2", false)
	waitEnv(t, a, "web", l.envValue)
	a.WaitStatus(t, time.Minute, func(d api.Document) (bool, string) {
		p, _ := findPodStatus(d, "web")
		return p.Rollout != nil && p.Rollout.State == rollouts.RolloutComplete, fmt.Sprintf("web rollout %+v", p.Rollout)
	})
	good := l.envValue
	l.envValue = leakSecret(t, "sopsenv3-")
	l.secrets["the env value that rolled back"] = l.envValue
	l.commit("v3 crashes", true)
	a.WaitStatus(t, 2*time.Minute, func(d api.Document) (bool, string) {
		p, _ := findPodStatus(d, "web")
		return p.Rollout != nil && p.Rollout.State == rollouts.RolloutRolledBack, fmt.Sprintf("web rollout %+v", p.Rollout)
	})
	waitEnv(t, a, "web", good)

	// A restart, then a good version again: what is published.
	a.Stop()
	a = agenttest.Start(t, loadConfig(t, l.cfgA), logger)
	waitEnv(t, a, "web", good)
	l.envValue = leakSecret(t, "sopsenv4-")
	l.secrets["the published env value"] = l.envValue
	l.commit("v4", false)
	waitEnv(t, a, "web", l.envValue)

	outputs := l.apiOutputs(a)
	// The second host waits for what is published for it, and runs it
	// with its own key.
	b := agenttest.Start(t, loadConfig(t, l.cfgB), logger)
	for _, args := range [][]string{
		{"validate", "--config", l.cfgA, "-o", "json"},
		{"diff", "--config", l.cfgA, "-o", "json"},
		{"diff", "--config", l.cfgA},
		{"publish", "--config", l.cfgB, "--source", "fleet=" + l.repo.Work, "--ref", l.repo.Head()},
	} {
		r := runCLI(t, args...)
		outputs["hostlet "+strings.Join(args, " ")] = fmt.Sprintf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		if args[0] == "publish" && r.code != 0 {
			t.Fatalf("publish: %s", outputs["hostlet "+strings.Join(args, " ")])
		}
	}
	waitEnv(t, b, "web", l.envValue)
	for k, v := range l.apiOutputs(b) {
		outputs["host b "+k] = v
	}
	a.Stop()
	b.Stop()
	outputs["the log"] = logs.String()
	outputs["what the webhook got"] = l.hook.String()
	l.addInspect(outputs)
	l.addEtcd(outputs)
	l.addStateDir(outputs, l.stateA)
	l.addStateDir(outputs, l.stateB)
	if !strings.Contains(outputs["what the webhook got"], "rollback") {
		t.Errorf("the webhook got no rollback: %s", outputs["what the webhook got"])
	}
	l.search(outputs)
}

// apiOutputs are a's API answers.
func (l *sopsLeak) apiOutputs(a *agenttest.Agent) map[string]string {
	out := map[string]string{}
	for _, p := range []string{"/status", "/events", "/metrics", "/stats", "/pods/web", "/pods/leak-shop-db", "/pods/leak-b-shop-db", "/stats/web/app"} {
		out["GET "+p] = getBody(l.t, a.URL(p))
	}
	return out
}

// addInspect adds docker inspect of every container of both hosts, the
// env left out (a container's own env is where a value is meant to be).
func (l *sopsLeak) addInspect(outputs map[string]string) {
	docker := dockertest.Client(l.t)
	for _, cfg := range []string{l.cfgA, l.cfgB} {
		for _, c := range instanceContainers(l.t, docker, loadConfig(l.t, cfg).Instance) {
			info, err := docker.ContainerInspect(context.Background(), c)
			if err != nil {
				l.t.Fatal(err)
			}
			info.Config.Env = nil
			b, _ := json.Marshal(info)
			outputs["docker inspect "+c] = string(b)
		}
	}
}

// addEtcd adds every etcd key and value, published sets decompressed.
func (l *sopsLeak) addEtcd(outputs map[string]string) {
	for k, v := range etcdEverything(l.t, l.etcd.Client(l.t)) {
		if p, err := fleet.DecodePublished([]byte(v), "fleet"); err == nil {
			b, _ := json.Marshal(p)
			v = string(b)
			if !strings.Contains(v, "sealed") {
				l.t.Errorf("the published set %s carries no encrypted file", k)
			}
		}
		outputs["etcd key "+k] = k + "\n" + v
	}
}

// addStateDir adds every file under stateDir, the sealed ones opened.
func (l *sopsLeak) addStateDir(outputs map[string]string, stateDir string) {
	stateKey, err := atomicfile.ReadKey(filepath.Join(stateDir, sources.StateKeyFile))
	if err != nil {
		l.t.Fatal(err)
	}
	sets, err := seal.New(stateKey)
	if err != nil {
		l.t.Fatal(err)
	}
	env, err := hsync.ReadEnvHasher(stateDir)
	if err != nil {
		l.t.Fatal(err)
	}
	kept, err := env.StateSealer()
	if err != nil {
		l.t.Fatal(err)
	}
	err = filepath.WalkDir(stateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, []byte(seal.Magic)) {
			name := strings.TrimSuffix(filepath.Base(p), ".json")
			if open, err := sets.Open(b, name); err == nil {
				b = open
			} else if open, err := kept.Open(b, filepath.Base(p)); err == nil {
				b = open
			} else {
				l.t.Errorf("%s is sealed with neither key", p)
			}
		}
		outputs["file "+p] = string(b)
		return nil
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

// search fails for every spelling of a secret found in an output.
func (l *sopsLeak) search(outputs map[string]string) {
	forms := map[string]string{}
	for what, s := range l.secrets {
		forms[s], forms[url.QueryEscape(s)] = what, what
		forms[base64.StdEncoding.EncodeToString([]byte(s))] = what + " (base64)"
	}
	n := 0
	for where, out := range outputs {
		n += len(out)
		for form, what := range forms {
			if strings.Contains(out, form) {
				l.t.Errorf("%s found in %s:\n%s", what, where, clip(out, form))
			}
		}
	}
	l.t.Logf("searched %d outputs (%d bytes) for %d spellings of %d secrets", len(outputs), n, len(forms), len(l.secrets))
}

// instanceContainers are the IDs of the containers of instance.
func instanceContainers(t *testing.T, docker *client.Client, instance string) []string {
	t.Helper()
	list, err := docker.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", hruntime.LabelInstance+"="+instance))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID)
	}
	return ids
}
