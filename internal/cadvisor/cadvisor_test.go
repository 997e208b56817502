package cadvisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// The files in testdata/ are answers of a cAdvisor (the manager of
// github.com/google/cadvisor v0.61.0 behind the daemon's API handlers,
// internal/tools/cadvisord) on a cgroup v1 host with Docker 20.10, with
// the machine's identifiers replaced:
//
//	machine.json           GET  /api/v1.3/machine
//	containers-root.json   POST /api/v1.3/containers/       {"num_stats":1}
//	docker-unlimited.json  POST /api/v1.3/docker/<id>       {"num_stats":1}  (no memory limit)
//	docker-limited.json    POST /api/v1.3/docker/<id>       {"num_stats":1}  (--memory 64m)
//	docker-unknown.txt     POST /api/v1.3/docker/0123456789ab  (500)
const (
	unlimitedID = "eec8de9486af8c16ca314b03050c10d7ef2c3ca6d9660debdd2a2ccbf2540846"
	limitedID   = "cfce862826004b01076d1c"
	capacity    = 25275990016
)

// recorded serves testdata/ as a cAdvisor would, under prefix, and keeps
// every request it got.
type recorded struct {
	t      *testing.T
	prefix string
	mu     sync.Mutex
	got    []string // "METHOD path body"
	auth   []string // the basic auth user:password of each request
}

func (c *recorded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u, p, _ := r.BasicAuth()
	c.mu.Lock()
	c.got = append(c.got, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(body)))
	c.auth = append(c.auth, u+":"+p)
	c.mu.Unlock()
	path, ok := strings.CutPrefix(r.URL.Path, c.prefix+"/api/v1.3/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	file := ""
	switch {
	case path == "machine" && r.Method == http.MethodGet:
		file = "machine.json"
	case path == "containers/" && r.Method == http.MethodPost:
		file = "containers-root.json"
	case path == "docker/"+unlimitedID:
		file = "docker-unlimited.json"
	case strings.HasPrefix(path, "docker/"+limitedID):
		file = "docker-limited.json"
	default:
		b, err := os.ReadFile(filepath.Join("testdata", "docker-unknown.txt"))
		if err != nil {
			c.t.Error(err)
		}
		http.Error(w, string(b), http.StatusInternalServerError)
		return
	}
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		c.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (c *recorded) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func serve(t *testing.T, prefix string) (*recorded, *httptest.Server) {
	c := &recorded{t: t, prefix: prefix}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

// TestMachine: cores and capacity from /machine, available memory the
// capacity less the root cgroup's working set, the time the sample's.
func TestMachine(t *testing.T) {
	rec, srv := serve(t, "")
	m, err := New(srv.URL).Machine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := hruntime.Machine{
		Time:                 time.Date(2026, 12, 3, 12, 39, 1, 388279964, time.UTC),
		Cores:                2,
		MemoryBytes:          capacity,
		MemoryAvailableBytes: capacity - 1850368000,
	}
	if m != want {
		t.Errorf("Machine = %+v, want %+v", m, want)
	}
	wantReq := []string{"GET /api/v1.3/machine", `POST /api/v1.3/containers/ {"num_stats":1}`}
	if got := rec.requests(); strings.Join(got, "\n") != strings.Join(wantReq, "\n") {
		t.Errorf("requests %q, want %q", got, wantReq)
	}
}

// TestStats: one Docker container's latest sample in the engine's terms.
func TestStats(t *testing.T) {
	rec, srv := serve(t, "")
	r := New(srv.URL + "/") // a trailing slash is the same base
	tests := []struct {
		name, id string
		want     hruntime.Stats
	}{
		{name: "unlimited: the limit is the machine's memory, as from the engine", id: unlimitedID, want: hruntime.Stats{
			Time:             time.Date(2026, 12, 3, 12, 38, 59, 342991057, time.UTC),
			MemoryUsageBytes: 1482752, MemoryWorkingSetBytes: 1482752, MemoryLimitBytes: capacity,
			CPUUsageSeconds: 0.036510536,
		}},
		{name: "limited", id: limitedID, want: hruntime.Stats{
			Time:             time.Date(2026, 12, 3, 12, 39, 1, 948276812, time.UTC),
			MemoryUsageBytes: 1576960, MemoryWorkingSetBytes: 1576960, MemoryLimitBytes: 64 << 20,
			CPUUsageSeconds: 0.034799698,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Stats(context.Background(), tc.id)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Stats = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := rec.requests(); len(got) != 4 || got[0] != `POST /api/v1.3/docker/`+unlimitedID+` {"num_stats":1}` || got[1] != "GET /api/v1.3/machine" {
		t.Errorf("requests %q", got)
	}
}

// TestPidsWithProcessMetrics: with process metrics on, pids are the pids
// cgroup's task count.
func TestPidsWithProcessMetrics(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "docker-limited.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, c := range doc {
		for _, s := range c["stats"].([]any) {
			s.(map[string]any)["processes"] = map[string]any{"process_count": 1, "threads_current": 7}
		}
	}
	machine, _ := os.ReadFile(filepath.Join("testdata", "machine.json"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/machine") {
			w.Write(machine)
			return
		}
		json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()
	st, err := New(srv.URL).Stats(context.Background(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if st.Pids != 7 {
		t.Errorf("pids %d, want 7", st.Pids)
	}
}

// TestPathPrefixAndCredentials: a base URL's path is kept (a cAdvisor
// with --url_base_prefix, or behind a proxy) and its userinfo is sent as
// basic auth, never shown in an error.
func TestPathPrefixAndCredentials(t *testing.T) {
	rec, srv := serve(t, "/cadvisor")
	base := strings.Replace(srv.URL, "http://", "http://ops:pw-3e9a1c@", 1) + "/cadvisor/"
	r := New(base)
	if _, err := r.Machine(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.requests(); len(got) != 2 || !strings.HasPrefix(got[0], "GET /cadvisor/api/v1.3/machine") {
		t.Errorf("requests %q", got)
	}
	for _, a := range rec.auth {
		if a != "ops:pw-3e9a1c" {
			t.Errorf("basic auth %q, want ops:pw-3e9a1c", a)
		}
	}
	_, err := r.Stats(context.Background(), "0123456789ab")
	if err == nil || strings.Contains(err.Error(), "pw-3e9a1c") || !strings.Contains(err.Error(), "REDACTED@") {
		t.Errorf("error %v: want the URL with its userinfo hidden", err)
	}
}

// TestPasswordEchoedNeverShown: whatever answers on the configured address
// may echo the password in a failure's body; the error shows the answer
// with the password hidden, or, for a password too short to hide
// wherever it occurs, not at all.
func TestPasswordEchoedNeverShown(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, p, _ := r.BasicAuth()
		http.Error(w, "denied for password "+p, http.StatusUnauthorized)
	}))
	t.Cleanup(echo.Close)
	tests := []struct {
		password string
		want     string
	}{
		{password: "q7", want: "401 Unauthorized (answer not shown: the password is too short to hide in it)"},
		{password: "Zx", want: "401 Unauthorized (answer not shown"},
		{password: "pw-3e9a1c", want: "401 Unauthorized: denied for password REDACTED"},
	}
	for _, tc := range tests {
		t.Run(tc.password, func(t *testing.T) {
			_, err := New(strings.Replace(echo.URL, "http://", "http://ops:"+tc.password+"@", 1)).Machine(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), tc.password) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want %q and no %q", err, tc.want, tc.password)
			}
		})
	}
}

// TestErrors: every failure is an error naming the cAdvisor and what it
// asked, promptly; none hangs.
func TestErrors(t *testing.T) {
	_, srv := serve(t, "")

	// Nothing listens on closedURL: FreePort's port is below the range the
	// listeners on port 0 below are given, so none of them can take it.
	closedURL := fmt.Sprintf("http://127.0.0.1:%d", testkit.FreePort(t))

	// hanging accepts connections and never answers.
	hanging, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := hanging.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				io.Copy(io.Discard, c) // until the client gives up
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		hanging.Close()
		conns.Wait()
	})

	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>not cadvisor</html>") }))
	t.Cleanup(garbage.Close)
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/machine") {
			io.WriteString(w, `{"num_cores":2,"memory_capacity":1024}`)
			return
		}
		io.WriteString(w, `{"name":"/","stats":[]}`)
	}))
	t.Cleanup(empty.Close)

	tests := []struct {
		name string
		base string
		call func(*Reader) error
		want []string
	}{
		{name: "unknown container", base: srv.URL, call: stats("0123456789ab"),
			want: []string{"cadvisor " + srv.URL + ": POST /api/v1.3/docker/0123456789ab: 500 Internal Server Error: failed to get Docker container \"0123456789ab\""}},
		{name: "unreachable", base: closedURL, call: machine,
			want: []string{"cadvisor " + closedURL + ": GET /api/v1.3/machine: ", "connection refused"}},
		{name: "no answer", base: "http://" + hanging.Addr().String(), call: stats(unlimitedID),
			want: []string{"cadvisor http://" + hanging.Addr().String() + ": POST /api/v1.3/docker/" + unlimitedID + ": no answer within 300ms"}},
		{name: "not cAdvisor", base: garbage.URL, call: machine,
			want: []string{"GET /api/v1.3/machine: decoding the answer"}},
		{name: "no sample yet", base: empty.URL, call: machine,
			want: []string{"the root cgroup has no memory sample yet"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := New(tc.base)
			r.timeout = 300 * time.Millisecond
			start := time.Now()
			err := tc.call(r)
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %s", took)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func machine(r *Reader) error {
	_, err := r.Machine(context.Background())
	return err
}

func stats(id string) func(*Reader) error {
	return func(r *Reader) error {
		_, err := r.Stats(context.Background(), id)
		return err
	}
}
