//go:build fleetsim

package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

var (
	simSizes = flag.String("fleet.n", "100,300,1000", "fleet sizes to simulate, comma-separated")
	// Each agent has its own client unless -fleet.share says how many
	// agents share one.
	simShare = flag.Int("fleet.share", 1, "agents per etcd client")
	// The etcd process's CPU profile (of the last size simulated).
	simEtcdProfile = flag.String("fleet.etcdprofile", "", "write the etcd process's CPU profile to this file")
)

const (
	prefix     = "/hostlet"
	sourceName = "fleet"
	// maxTxnOps is etcd's default --max-txn-ops.
	maxTxnOps = 128
	// putWorkers is how many one-key Puts the "put" publish keeps in flight.
	putWorkers = 16
	// converge bounds the wait of one round for every agent.
	converge = 120 * time.Second
	envChild = "HOSTLET_FLEETSIM_ETCD"
)

// TestMain runs the test binary as the simulation's etcd when TestFleetSim
// starts it with envChild set (a process of its own, so that its CPU and
// RSS are its own), and the tests otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(envChild) != "" {
		testing.Main(func(string, string) (bool, error) { return true, nil },
			[]testing.InternalTest{{Name: "SimEtcdServer", F: simEtcdServer}}, nil, nil)
		return
	}
	os.Exit(m.Run())
}

// simEtcdServer prints the etcd's endpoint and serves until its stdin
// closes.
func simEtcdServer(t *testing.T) {
	srv := etcdtest.Start(t)
	fmt.Printf("ENDPOINT %s\n", srv.Endpoint)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// etcdProc is the etcd child process.
type etcdProc struct {
	pid      int
	endpoint string
}

func startEtcd(t *testing.T) etcdProc {
	t.Helper()
	args := []string{"-test.v"}
	if *simEtcdProfile != "" {
		args = append(args, "-test.cpuprofile="+*simEtcdProfile)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	lines := bufio.NewScanner(stdout)
	var endpoint string
	for lines.Scan() {
		if ep, ok := strings.CutPrefix(lines.Text(), "ENDPOINT "); ok {
			endpoint = ep
			break
		}
	}
	go func() {
		for lines.Scan() {
		}
		_ = cmd.Wait()
		close(exited)
	}()
	if endpoint == "" {
		t.Fatal("the etcd process printed no endpoint")
	}
	return etcdProc{pid: cmd.Process.Pid, endpoint: endpoint}
}

// procUsage is a process's CPU time so far and its resident memory.
type procUsage struct {
	cpu      time.Duration
	rss, hwm int64 // bytes
}

// usageOf reads /proc/<pid> ("self" for this process).
func usageOf(t *testing.T, pid string) procUsage {
	t.Helper()
	var u procUsage
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// fields 14 and 15 (1-based), in clock ticks of 1/100 s.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	u.cpu = time.Duration(ut+st) * 10 * time.Millisecond
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			u.rss = kb << 10
		case "VmHWM":
			u.hwm = kb << 10
		}
	}
	return u
}

// target is what an agent must run to have converged: its pods at a
// release, each container at its spec hash.
type target struct {
	release string
	hashes  map[string][]string // pod ID → container hashes
	start   time.Time
}

// agent is one simulated host: published source → merger → Syncer on a
// fake engine, as internal/agent wires them.
type agent struct {
	host   string
	syncer *hsync.Syncer
	target atomic.Pointer[target]
	// doneAt is the time it converged on target (nil until then);
	// seenAt the time its merger took the target's release (nil until
	// then): the etcd path alone, watch event, Get and decode.
	doneAt, seenAt atomic.Pointer[time.Time]
	done           chan<- int
	index          int
}

// check records the agent as converged when its report shows every pod
// of the target Running at the target's release and hashes.
func (a *agent) check() {
	tg := a.target.Load()
	if tg == nil || a.doneAt.Load() != nil {
		return
	}
	r := a.syncer.Report()
	seen := 0
	for _, p := range r.Pods {
		want, ok := tg.hashes[p.ID]
		if !ok {
			continue
		}
		if p.Revision != tg.release || p.Phase != hsync.PhaseRunning || len(p.Containers) != len(want) {
			return
		}
		for i, c := range p.Containers {
			if c.Hash != want[i] || c.State != "running" {
				return
			}
		}
		seen++
	}
	if seen != len(tg.hashes) {
		return
	}
	now := time.Now()
	if a.doneAt.CompareAndSwap(nil, &now) {
		a.done <- a.index
	}
}

func (a *agent) run(ctx context.Context, wg *gosync.WaitGroup, cli *clientv3.Client, log *slog.Logger) error {
	src := sources.NewPublished(config.Source{Name: sourceName, Type: config.TypeGit, Via: config.ViaEtcd, Timeout: 5 * time.Second},
		cli, fleet.DesiredKey(prefix, a.host, sourceName), log)
	merger, err := sources.NewMerger([]sources.SourceInfo{{Name: src.Name(), Type: src.Type()}}, sources.MergeOptions{}, log)
	if err != nil {
		return err
	}
	a.syncer, err = hsync.New(synctest.NewFake(), hsync.Options{Instance: "sim", InfraImage: "example.org/pause:1", Interval: 30 * time.Second,
		Concurrency: 2, OnSync: func(time.Duration, error) { a.check() }}, log, eventlog.NewLog(20))
	if err != nil {
		return err
	}
	updates := make(chan sources.Update)
	wg.Go(func() { src.Run(ctx, updates) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case u := <-updates:
				if merger.Apply(u) {
					if tg := a.target.Load(); tg != nil && u.Revision == tg.release {
						now := time.Now()
						a.seenAt.CompareAndSwap(nil, &now)
					}
					a.syncer.SetDesired(toDesired(merger.State()))
				}
			}
		}
	})
	wg.Go(func() { _ = a.syncer.Run(ctx) })
	return nil
}

// toDesired is internal/agent's.
func toDesired(st sources.State) hsync.Desired {
	d := hsync.Desired{Rejected: st.Rejected, Ready: st.Ready}
	for _, e := range st.Accepted {
		d.Pods = append(d.Pods, hsync.NewPod(e.Manifest, e.Origin.Source, e.Revision))
	}
	return d
}

// hostSet is a host's published set at a release: two pods, one
// container each, a label naming the release and an env naming the host
// (so that every host's value differs, as rendered sets do).
func hostSet(host string, rel int) (fleet.Published, map[string][]string, error) {
	var b strings.Builder
	for _, id := range []string{"web", "api"} {
		fmt.Fprintf(&b, `- version: v1beta1
  id: %[1]s
  labels: {app: %[1]s, release: "r%[3]d"}
  containers:
    - name: %[1]s
      image: registry.example.org/shop/%[1]s:1.4.2
      env:
        - {name: HOSTNAME_OVERRIDE, value: %[2]s}
        - {name: RELEASE, value: "r%[3]d"}
      ports: [{containerPort: 8080}]
`, id, host, rel)
	}
	ms, err := manifest.Decode([]byte(b.String()), manifest.Origin{Source: sourceName, File: "hosts/" + host + "/pods.yaml"})
	if err != nil {
		return fleet.Published{}, nil, err
	}
	hashes := map[string][]string{}
	for _, s := range ms {
		m := s.Manifest.WithDefaults()
		for i := range m.Containers {
			hashes[m.ID] = append(hashes[m.ID], manifest.ContainerHash(m, i))
		}
	}
	return fleet.Published{Release: fmt.Sprintf("%040x", rel), Source: sourceName, Files: 1, Manifests: ms}, hashes, nil
}

// release is one publish: every host's encoded value and target.
type release struct {
	rev     string
	keys    []string
	values  [][]byte
	targets []*target
	// raw is the JSON size before gzip, summed over the hosts.
	raw int
}

func makeRelease(t *testing.T, hosts []string, rel int) release {
	t.Helper()
	r := release{rev: fmt.Sprintf("%040x", rel)}
	for _, h := range hosts {
		p, hashes, err := hostSet(h, rel)
		if err != nil {
			t.Fatal(err)
		}
		v, err := fleet.EncodePublished(p)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := gunzippedSize(v)
		if err != nil {
			t.Fatal(err)
		}
		r.raw += raw
		r.keys = append(r.keys, fleet.DesiredKey(prefix, h, sourceName))
		r.values = append(r.values, v)
		r.targets = append(r.targets, &target{release: r.rev, hashes: hashes})
	}
	return r
}

func gunzippedSize(v []byte) (int, error) {
	p, err := fleet.DecodePublished(v, sourceName)
	if err != nil {
		return 0, err
	}
	p.Format = fleet.PublishedFormat
	var n countWriter
	return int(n), encodeJSON(&n, p)
}

// publishTxn writes the release as hostlet publish does: transactions of
// at most maxTxnOps puts, one after the other, the release record last.
func publishTxn(ctx context.Context, cli *clientv3.Client, r release) (int, error) {
	var ops []clientv3.Op
	for i, k := range r.keys {
		ops = append(ops, clientv3.OpPut(k, string(r.values[i])))
	}
	ops = append(ops, clientv3.OpPut(fleet.ReleaseKey(prefix, r.rev), `{"release":"`+r.rev+`"}`))
	txns := 0
	for len(ops) > 0 {
		n := min(len(ops), maxTxnOps)
		if _, err := cli.Txn(ctx).Then(ops[:n]...).Commit(); err != nil {
			return txns, err
		}
		ops, txns = ops[n:], txns+1
	}
	return txns, nil
}

// publishPuts writes one Put per host, putWorkers at a time, then the
// release record.
func publishPuts(ctx context.Context, cli *clientv3.Client, r release) (int, error) {
	var (
		next atomic.Int64
		wg   gosync.WaitGroup
		errs = make(chan error, putWorkers)
	)
	for range putWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(r.keys) {
					return
				}
				if _, err := cli.Put(ctx, r.keys[i], string(r.values[i])); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	_, err := cli.Put(ctx, fleet.ReleaseKey(prefix, r.rev), `{"release":"`+r.rev+`"}`)
	return len(r.keys) + 1, err
}

// result is one round's figures.
type result struct {
	n                          int
	mode                       string
	writes                     int
	publish                    time.Duration
	p50, p99, max              time.Duration
	seen50, seen99             time.Duration
	load                       string
	etcdCPU, selfCPU, wall     time.Duration
	etcdRSS, selfRSS           int64
	valueMin, valueAvg, valMax int
	rawAvg                     int
	releaseBytes               int
	dbGrowth                   int64
	perAgentHeap               int64
	perAgentGoroutines         int
	clients                    int
}

func TestFleetSim(t *testing.T) {
	var results []result
	for s := range strings.SplitSeq(*simSizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("-fleet.n: %q is not a size", s)
		}
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			results = append(results, simulate(t, n)...)
		})
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%6s %-4s %6s %8s %8s %8s %8s %8s %8s %8s %8s %8s %10s %7s %9s %9s %9s %7s %6s  %s\n",
		"agents", "mode", "writes", "publish", "seen50", "seen99", "p50", "p99", "max", "etcd-cpu", "proc-cpu", "etcd-rss", "agents-rss",
		"value-B", "raw-B", "release-B", "db-growth", "heap/ag", "gor/ag", "load")
	for _, r := range results {
		fmt.Fprintf(&b, "%6d %-4s %6d %8s %8s %8s %8s %8s %8s %8s %8s %7dM %9dM %7d %9d %9d %9d %6dK %6d  %s\n",
			r.n, r.mode, r.writes, ms(r.publish), ms(r.seen50), ms(r.seen99), ms(r.p50), ms(r.p99), ms(r.max), ms(r.etcdCPU), ms(r.selfCPU), r.etcdRSS>>20, r.selfRSS>>20,
			r.valueAvg, r.rawAvg, r.releaseBytes, r.dbGrowth, r.perAgentHeap>>10, r.perAgentGoroutines, r.load)
	}
	b.WriteString("publish: from its start to its last write's answer; seen50/99: from the publish's start to an agent's merger taking the release (watch, Get, decode);\n")
	b.WriteString("p50/p99/max: from the publish's start to an agent's pods Running at the new release (its Syncer's report)\n")
	b.WriteString("etcd-cpu: the etcd process (a child of its own) over the round; proc-cpu: the agents' process (agents, their clients, the publisher); rss at the round's end\n")
	b.WriteString("load: the machine's 1-minute load average at the round's end (other work on the machine shows there)\n")
	b.WriteString("value-B: a host's gzip'd value (mean); raw-B: its JSON before gzip; release-B: every host's value plus the release record; db-growth: etcd's db size after - before\n")
	fmt.Print(b.String())
}

func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

func simulate(t *testing.T, n int) []result {
	etcd := startEtcd(t)
	dial := func() *clientv3.Client {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{etcd.endpoint}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cli.Close() })
		return cli
	}
	pub := dial()
	ctx := t.Context()
	hosts := make([]string, n)
	for i := range hosts {
		hosts[i] = fmt.Sprintf("host-%04d", i)
	}

	// Release 1 is there before the agents start.
	r1 := makeRelease(t, hosts, 1)
	p0 := time.Now()
	if _, err := publishTxn(ctx, pub, r1); err != nil {
		t.Fatal(err)
	}
	t.Logf("n=%d: release 1 written in %s, no agent watching", n, time.Since(p0).Round(time.Millisecond))

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()

	done := make(chan int, n)
	agents := make([]*agent, n)
	actx, cancel := context.WithCancel(ctx)
	var wg gosync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	log := slog.New(slog.DiscardHandler)
	share := max(*simShare, 1)
	var cli *clientv3.Client
	clients := 0
	start := time.Now()
	for i, h := range hosts {
		if i%share == 0 {
			cli = dial()
			clients++
		}
		a := &agent{host: h, done: done, index: i}
		tg := *r1.targets[i]
		tg.start = start
		a.target.Store(&tg)
		agents[i] = a
		if err := a.run(actx, &wg, cli, log); err != nil {
			t.Fatal(err)
		}
	}
	// Every agent runs release 1 (its first pull included).
	waitAll(t, agents, done, "release 1")
	t.Logf("n=%d: %d agents (%d etcd clients) converged on release 1 in %s from their start", n, n, clients, time.Since(start).Round(time.Millisecond))

	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	perHeap := (int64(after.HeapInuse) - int64(before.HeapInuse)) / int64(n)
	perGoroutines := (runtime.NumGoroutine() - goroutinesBefore) / n

	var out []result
	for i, mode := range []string{"txn", "put"} {
		r := makeRelease(t, hosts, 2+i)
		res := result{n: n, mode: mode, perAgentHeap: perHeap, perAgentGoroutines: perGoroutines, clients: clients, rawAvg: r.raw / n}
		res.valueMin = len(r.values[0])
		for _, v := range r.values {
			res.valueMin, res.valMax = min(res.valueMin, len(v)), max(res.valMax, len(v))
			res.releaseBytes += len(v)
		}
		res.valueAvg = res.releaseBytes / n
		res.releaseBytes += len(`{"release":"` + r.rev + `"}`)
		dbBefore := dbSize(t, pub, etcd.endpoint)
		// Quiet: the agents' syncs after the last round settled.
		waitQuiet(t, strconv.Itoa(etcd.pid))
		etcd0, self0 := usageOf(t, strconv.Itoa(etcd.pid)), usageOf(t, "self")
		t0 := time.Now()
		for j, a := range agents {
			a.doneAt.Store(nil)
			a.seenAt.Store(nil)
			r.targets[j].start = t0
			a.target.Store(r.targets[j])
		}
		var err error
		if mode == "txn" {
			res.writes, err = publishTxn(ctx, pub, r)
		} else {
			res.writes, err = publishPuts(ctx, pub, r)
		}
		if err != nil {
			t.Fatalf("publish %s: %v", mode, err)
		}
		res.publish = time.Since(t0)
		lat := waitAll(t, agents, done, "release "+r.rev[len(r.rev)-1:])
		res.wall = time.Since(t0)
		etcd1, self1 := usageOf(t, strconv.Itoa(etcd.pid)), usageOf(t, "self")
		res.etcdCPU, res.selfCPU = etcd1.cpu-etcd0.cpu, self1.cpu-self0.cpu
		res.etcdRSS, res.selfRSS = etcd1.rss, self1.rss
		res.dbGrowth = dbSize(t, pub, etcd.endpoint) - dbBefore
		slices.Sort(lat)
		var seen []time.Duration
		for _, a := range agents {
			if at := a.seenAt.Load(); at != nil {
				seen = append(seen, at.Sub(t0))
			}
		}
		if len(seen) != n {
			t.Fatalf("%d of %d agents' mergers saw release %s", len(seen), n, r.rev)
		}
		slices.Sort(seen)
		res.seen50, res.seen99 = seen[len(seen)/2], seen[min(len(seen)-1, len(seen)*99/100)]
		res.load = loadAvg(t)
		res.p50, res.p99, res.max = lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)], lat[len(lat)-1]
		t.Logf("n=%d %s: %d writes in %s; seen by the merger p50 %s p99 %s; converged p50 %s p99 %s max %s (all in %s); etcd cpu %s rss %dMiB (peak %dMiB); agents' process cpu %s rss %dMiB; load %s",
			n, mode, res.writes, res.publish.Round(time.Millisecond), res.seen50.Round(time.Millisecond), res.seen99.Round(time.Millisecond), res.p50.Round(time.Millisecond), res.p99.Round(time.Millisecond), res.max.Round(time.Millisecond),
			res.wall.Round(time.Millisecond), res.etcdCPU, res.etcdRSS>>20, etcd1.hwm>>20, res.selfCPU, res.selfRSS>>20, res.load)
		out = append(out, res)
	}
	t.Logf("n=%d: a host's value %d..%d bytes gzip'd, %d bytes of JSON; per agent %d KiB heap, %d goroutines", n, out[0].valueMin, out[0].valMax, out[0].rawAvg, perHeap>>10, perGoroutines)
	return out
}

// waitAll waits until every agent converged on its target and returns
// each one's time from its target's start.
func waitAll(t *testing.T, agents []*agent, done <-chan int, what string) []time.Duration {
	t.Helper()
	deadline := time.NewTimer(converge)
	defer deadline.Stop()
	lat := make([]time.Duration, 0, len(agents))
	for len(lat) < len(agents) {
		select {
		case i := <-done:
			a := agents[i]
			lat = append(lat, a.doneAt.Load().Sub(a.target.Load().start))
		case <-deadline.C:
			var behind []string
			for _, a := range agents {
				if a.doneAt.Load() == nil && len(behind) < 5 {
					behind = append(behind, a.host)
				}
			}
			t.Fatalf("%s: %d of %d agents converged within %s; behind: %v", what, len(lat), len(agents), converge, behind)
		}
	}
	return lat
}

func dbSize(t *testing.T, cli *clientv3.Client, endpoint string) int64 {
	t.Helper()
	st, err := cli.Status(t.Context(), endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return st.DbSize
}

// loadAvg is the machine's 1-minute load average.
func loadAvg(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))[0]
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

// encodeJSON encodes v as EncodePublished does before gzip.
func encodeJSON(w io.Writer, v any) error { return json.NewEncoder(w).Encode(v) }

// waitQuiet waits (at most a minute) until this process and the etcd
// process pid used under 10 ms of CPU each over a 250 ms sample: what the
// last round started has settled before the next is measured.
func waitQuiet(t *testing.T, pid string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		self0, etcd0 := usageOf(t, "self"), usageOf(t, pid)
		tick := time.NewTimer(250 * time.Millisecond)
		<-tick.C
		self1, etcd1 := usageOf(t, "self"), usageOf(t, pid)
		if self1.cpu-self0.cpu < 10*time.Millisecond && etcd1.cpu-etcd0.cpu < 10*time.Millisecond {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agents and etcd not quiet within a minute (last sample: %s and %s of CPU in 250 ms)", self1.cpu-self0.cpu, etcd1.cpu-etcd0.cpu)
		}
	}
}
