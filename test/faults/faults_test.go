//go:build faults

package faults

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
)

// The suite's flags (after -args).
var (
	flagHostlet  = flag.String("hostlet", "", "hostlet binary to run (default: build ./cmd/hostlet into the run's folder)")
	flagSeed     = flag.Uint64("seed", 0, "seed of the fault points (0: from the clock; printed, so a run can be repeated)")
	flagReps     = flag.Int("reps", 3, "injections of each fault class")
	flagClasses  = flag.String("classes", "", "comma-separated fault classes to run (default: all)")
	flagEtcdDown = flag.Duration("etcd-down", time.Minute, "how long etcd stays stopped in etcd-down")
	flagConverge = flag.Duration("converge", 45*time.Second, "deadline for the invariants to hold again after a fault")
	flagLog      = flag.String("log", "", "copy hostlet's log (every process of the run) to this file at the end")
)

// stateSize is the size of the tmpfs holding hostlet's stateDir.
const stateSize = "32m"

func TestFaults(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the fault suite needs root: it runs its own dockerd and mounts a tmpfs (run `make faults` as root)")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	classes, err := selectClasses(*flagClasses)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s := newSuite(t, seed)
	fmt.Printf("faults: seed=%d reps=%d instance=%s (repeat with -seed %d)\n", seed, *flagReps, s.instance, seed)
	results := s.run(classes, *flagReps)

	fmt.Println()
	total := classResult{name: "total"}
	for _, c := range classes {
		r := results[c.name]
		fmt.Println(r.line())
		total.add(r)
		for _, f := range r.failures {
			fmt.Printf("    %s\n", f)
		}
	}
	fmt.Printf("faults: %s seed=%d time=%s\n", total.summary(), seed, time.Since(start).Round(time.Second))
	for _, hung := range s.eng.hungStarts {
		fmt.Printf("the engine hung at a start and was killed and started again (not a fault of hostlet's: it starts after the engine answers): %s\n", hung)
	}
	if !total.ok() {
		t.Errorf("fault suite failed (seed %d); run again with -log FILE to keep hostlet's log", seed)
	}
}

// options of one class's injections.
type class struct {
	name string
	run  func(s *suite, rep int, inj *injection)
}

// classes are run in this order, each -reps times; the kill classes take
// turns (create, recreate, prune, then the next repetition), since each
// works on the pods the one before made.
var allClasses = []class{
	{"kill-mid-create", (*suite).killMidCreate},
	{"kill-mid-recreate", (*suite).killMidRecreate},
	{"kill-mid-prune", (*suite).killMidPrune},
	{"kill-before-late-removal", (*suite).killBeforeLateRemoval},
	{"engine-restart", (*suite).engineRestart},
	{"etcd-down", (*suite).etcdDown},
	{"git-down", (*suite).gitDown},
	{"git-force-push", (*suite).gitForcePush},
	{"git-cache-truncated", (*suite).gitCacheTruncated},
	{"http-flaky", (*suite).httpFlaky},
	{"state-truncated", func(s *suite, rep int, inj *injection) { s.stateDamage(rep, inj, damageTruncate) }},
	{"state-emptied", func(s *suite, rep int, inj *injection) { s.stateDamage(rep, inj, damageEmpty) }},
	{"state-garbage", func(s *suite, rep int, inj *injection) { s.stateDamage(rep, inj, damageGarbage) }},
	{"state-unreadable", func(s *suite, rep int, inj *injection) { s.stateDamage(rep, inj, damageUnreadable) }},
	{"disk-full", (*suite).diskFull},
	{"host-reboot", (*suite).hostReboot},
}

func selectClasses(list string) ([]class, error) {
	if list == "" {
		return allClasses, nil
	}
	var out []class
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(allClasses, func(c class) bool { return c.name == name })
		if i < 0 {
			var names []string
			for _, c := range allClasses {
				names = append(names, c.name)
			}
			return nil, fmt.Errorf("-classes: unknown class %q (known: %s)", name, strings.Join(names, ", "))
		}
		out = append(out, allClasses[i])
	}
	return out, nil
}

// suite is one run: the engine, the sources, hostlet, and the model of
// what the sources hold.
type suite struct {
	t        *testing.T
	ctx      context.Context
	rnd      *rand.Rand
	instance string
	dir      string
	stateDir string

	eng *engine
	cli *client.Client
	w   *watcher
	h   *hostlet
	m   *model

	git     *gitFeed
	gitSrv  *gittest.Server
	web     *httpSource
	etcd    *etcdtest.Server
	fileDir string
	push    *pushFeed
	feeds   map[string]feed

	// seq numbers the pods the suite adds.
	seq int
	// batches are the pods each kill-mid-create repetition added.
	batches map[int]batch
	// httpModes orders http-flaky's failure modes (a permutation).
	httpModes []int
}

func newSuite(t *testing.T, seed uint64) *suite {
	s := &suite{t: t, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), instance: "faults-" + randomHex(4), batches: map[int]batch{}}
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx = ctx
	dir, err := os.MkdirTemp("", "hostlet-faults-")
	if err != nil {
		t.Fatal(err)
	}
	s.dir = dir
	// Clean-ups run last-registered first: this one runs last of all.
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("remove %s: %v", dir, err)
		}
	})
	t.Cleanup(cancel)

	bin := filepath.Join(dir, "hostlet")
	if *flagHostlet != "" {
		// A copy: a `make build` during the run must not swap the binary.
		if err := copyFile(repoPath(*flagHostlet), bin); err != nil {
			t.Fatal(err)
		}
	} else if err := goBuild("./cmd/hostlet", bin); err != nil {
		t.Fatal(err)
	}
	demo := filepath.Join(dir, "demo")
	if err := goBuild("./examples/demo", demo); err != nil {
		t.Fatal(err)
	}

	s.eng = newEngine(filepath.Join(dir, "engine"))
	if err := os.MkdirAll(s.eng.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.eng.remove(s.instance); err != nil {
			t.Errorf("remove the engine: %v", err)
		}
	})
	if err := s.eng.start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.cli, err = s.eng.client(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.cli.Close() })
	image := "hostlet-faults-demo:" + s.instance
	if err := loadImage(ctx, s.cli, image, demo); err != nil {
		t.Fatal(err)
	}
	s.w = newWatcher(s.eng, s.instance)
	go s.w.run(ctx)

	// stateDir on a small tmpfs of its own (disk-full fills it).
	s.stateDir = filepath.Join(dir, "state")
	if err := os.MkdirAll(s.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", s.stateDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+stateSize+",mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", s.stateDir, err)
	}
	t.Cleanup(func() {
		if err := unmountUnder(s.stateDir); err != nil {
			t.Errorf("unmount %s: %v", s.stateDir, err)
		}
	})

	s.etcd = etcdtest.Start(t)
	gitRoot := filepath.Join(dir, "git")
	if err := os.MkdirAll(gitRoot, 0o700); err != nil {
		t.Fatal(err)
	}
	repo := gittest.NewRepoIn(t, gitRoot, "fleet.git")
	s.gitSrv = gittest.Serve(t, gitRoot, "", "")
	s.web = &httpSource{mode: httpUp}
	if err := s.web.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.web.stop)
	s.fileDir = filepath.Join(dir, "manifests")
	if err := os.MkdirAll(s.fileDir, 0o700); err != nil {
		t.Fatal(err)
	}

	token := randomHex(16)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	prefix := "/" + s.instance
	cfg := hostletConfig{
		instance: s.instance, stateDir: s.stateDir, listen: fmt.Sprintf("127.0.0.1:%d", port),
		tokenFile: tokenFile, dockerHost: s.eng.host(),
		gitURL: s.gitSrv.RepoURL(repo), httpURL: s.web.url(),
		etcdEndpoint: s.etcd.Endpoint, etcdPrefix: prefix + "/hostlet", etcdKey: prefix + "/pods",
		fileDir: s.fileDir,
	}
	cfgPath := filepath.Join(dir, "hostlet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.yaml()), 0o600); err != nil {
		t.Fatal(err)
	}
	s.h = &hostlet{bin: bin, config: cfgPath, log: filepath.Join(dir, "hostlet.log"), api: "http://" + cfg.listen, token: token}
	t.Cleanup(func() {
		s.h.stop()
		if *flagLog != "" {
			if err := copyFile(s.h.log, repoPath(*flagLog)); err != nil {
				t.Errorf("keep hostlet's log: %v", err)
			}
		}
	})

	s.m = newModel(image, sourceOrder)
	s.git = &gitFeed{m: s.m, repo: repo}
	s.push = &pushFeed{m: s.m, api: s.h.api, token: token}
	s.feeds = map[string]feed{
		srcGit:  s.git,
		srcHTTP: &httpFeed{m: s.m, srv: s.web},
		srcEtcd: &etcdFeed{m: s.m, endpoint: s.etcd.Endpoint, key: cfg.etcdKey},
		srcFile: &fileFeed{m: s.m, dir: s.fileDir},
		srcPush: s.push,
	}
	s.begin()
	return s
}

// begin publishes the first sets and starts hostlet on them: eight pods,
// two of them of two containers.
func (s *suite) begin() {
	s.t.Helper()
	first := map[string][]pod{
		srcGit:  {{ID: "git-a", Two: true}, {ID: "git-b"}, {ID: "git-c"}},
		srcHTTP: {{ID: "web-a", Two: true}, {ID: "web-b"}},
		srcEtcd: {{ID: "kv-a"}},
		srcFile: {{ID: "local-a"}},
		srcPush: {{ID: "push-a"}},
	}
	for _, src := range sourceOrder {
		if src == srcPush {
			continue
		}
		if err := s.set(src, byID(first[src])); err != nil {
			s.t.Fatal(err)
		}
	}
	s.startHostlet()
	if err := s.set(srcPush, byID(first[srcPush])); err != nil {
		s.t.Fatal(err)
	}
	inj := newInjection("first start")
	s.wait(inj, "first start", expect{from: time.Now(), syncAfter: time.Now(), sourcesOK: true, timeout: 3 * time.Minute})
	if !inj.ok() {
		s.t.Fatalf("hostlet did not start the first pods: %s", strings.Join(inj.failures, "; "))
	}
}

// run injects every class reps times and returns the results by class.
func (s *suite) run(classes []class, reps int) map[string]*classResult {
	results := map[string]*classResult{}
	for _, c := range classes {
		results[c.name] = &classResult{name: c.name}
	}
	// The kill classes take turns; every other class runs its reps in a
	// row.
	var plan []class
	var kills []class
	for _, c := range classes {
		if strings.HasPrefix(c.name, "kill-mid-") {
			kills = append(kills, c)
		}
	}
	for rep := 0; rep < reps; rep++ {
		plan = append(plan, kills...)
	}
	for _, c := range classes {
		if !strings.HasPrefix(c.name, "kill-mid-") {
			for rep := 0; rep < reps; rep++ {
				plan = append(plan, c)
			}
		}
	}
	done := map[string]int{}
	for _, c := range plan {
		rep := done[c.name]
		done[c.name]++
		inj := newInjection(c.name)
		began := time.Now()
		c.run(s, rep, inj)
		r := results[c.name]
		r.record(inj)
		verdict := fmt.Sprintf("ok, converged in %s", inj.converge.Round(10*time.Millisecond))
		if !inj.ok() {
			verdict = "FAIL: " + strings.Join(inj.failures, "; ")
		}
		s.t.Logf("%s #%d (%s): %s", c.name, rep+1, time.Since(began).Round(100*time.Millisecond), verdict)
		if !inj.ok() {
			s.recover(c.name)
		}
	}
	return results
}

// set makes source src hold pods and, when that worked, the model too.
// Each change is followed by the webhook, so polling sources read it now.
func (s *suite) set(src string, pods map[string]pod) error {
	s.t.Helper()
	list := sortedPods(pods)
	if err := s.feeds[src].publish(s.t, list); err != nil {
		return fmt.Errorf("publish to source %s: %w", src, err)
	}
	s.m.pods[src] = pods
	s.h.syncNow()
	return nil
}

// startHostlet starts hostlet and waits for its API.
func (s *suite) startHostlet() {
	s.t.Helper()
	if err := s.h.start(); err != nil {
		s.t.Fatal(err)
	}
	if err := s.h.waitAPI(s.ctx, 2*time.Minute); err != nil {
		// The wait that follows says so, with the log's last lines.
		s.t.Logf("hostlet did not come up: %s", firstLine(err.Error()))
	}
}

// newID is a new pod ID for source src.
func (s *suite) newID(src string) string {
	s.seq++
	return fmt.Sprintf("%s-n%d", src, s.seq)
}

// pick returns a random element of xs.
func pick[T any](s *suite, xs []T) T { return xs[s.rnd.IntN(len(xs))] }

// between returns a random duration in [lo, hi).
func (s *suite) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(s.rnd.Int64N(int64(hi-lo)))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// goBuild builds pkg as `make build` does (static, trimmed) into out.
func goBuild(pkg, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-tags", "grpcnotrace,nethttpomithttp2", "-ldflags", "-s -w", "-o", out, pkg)
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// repoPath resolves a path given on the command line: go test runs in
// test/faults, so a relative path is taken from the repository root.
func repoPath(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(moduleRoot(), p)
}

// moduleRoot is the repository root (this package is test/faults).
func moduleRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	return filepath.Dir(filepath.Dir(wd))
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return out.Close()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
