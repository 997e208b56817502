package gittest

import (
	"crypto/subtle"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
)

// Server serves the bare repositories under a folder over git's smart HTTP
// protocol (git http-backend run through net/http/cgi), on 127.0.0.1,
// behind basic auth.
type Server struct {
	t        testing.TB
	root     string
	user     string
	password string
	backend  string
	home     string
	stderr   *testOutput

	mu   sync.Mutex
	addr string
	srv  *httptest.Server

	infoRefs, uploadPack, other, unauthorized atomic.Int64
}

// Counts are the requests a Server answered, by kind. Every request counts,
// whether its credentials were right or not.
type Counts struct {
	// InfoRefs counts GET .../info/refs (ref advertisement: what ls-remote
	// and the first step of a fetch ask for).
	InfoRefs int64
	// UploadPack counts POST .../git-upload-pack (a fetch's negotiation and
	// pack download).
	UploadPack int64
	// Other counts every other request.
	Other int64
	// Unauthorized counts requests answered 401.
	Unauthorized int64
}

// Serve serves every bare repository under root at /<name> (so a Repo's URL
// is URL()+"/"+repo.Name) with basic auth user:password, until the test
// ends. An empty user turns auth off.
func Serve(t testing.TB, root, user, password string) *Server {
	t.Helper()
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatalf("gittest: git --exec-path: %v", err)
	}
	s := &Server{
		t: t, root: root, user: user, password: password,
		backend: filepath.Join(strings.TrimSpace(string(execPath)), "git-http-backend"),
		home:    t.TempDir(),
		stderr:  &testOutput{w: t.Output()},
	}
	t.Cleanup(s.stderr.close)
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// testOutput passes git http-backend's messages to the test's output until
// the test ends.
type testOutput struct {
	mu   sync.Mutex
	w    io.Writer
	done bool
}

func (o *testOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done {
		return len(p), nil
	}
	return o.w.Write(p)
}

func (o *testOutput) close() {
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
}

// URL is the server's base URL, "http://127.0.0.1:<port>".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// RepoURL is the URL of repo (whose Root must be the served root).
func (s *Server) RepoURL(r *Repo) string { return s.URL() + "/" + r.Name }

// Stop takes the server down: every later request is refused at the TCP
// level until Start. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.CloseClientConnections()
		srv.Close()
	}
}

// Start brings the server up again on the address it had (a new port the
// first time). Starting a running server does nothing.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return
	}
	ln, err := testkit.Listen(s.addr)
	if err != nil {
		s.t.Fatalf("gittest: listen on %q: %v", s.addr, err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	s.srv, s.addr = srv, ln.Addr().String()
}

// Counts returns the requests answered since the start or the last
// ResetCounts.
func (s *Server) Counts() Counts {
	return Counts{
		InfoRefs: s.infoRefs.Load(), UploadPack: s.uploadPack.Load(),
		Other: s.other.Load(), Unauthorized: s.unauthorized.Load(),
	}
}

// ResetCounts sets every count to zero.
func (s *Server) ResetCounts() {
	s.infoRefs.Store(0)
	s.uploadPack.Store(0)
	s.other.Store(0)
	s.unauthorized.Store(0)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs"):
		s.infoRefs.Add(1)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		s.uploadPack.Add(1)
	default:
		s.other.Add(1)
	}
	remoteUser := ""
	if s.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(s.password)) != 1 {
			s.unauthorized.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="gittest"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		remoteUser = u
	}
	h := &cgi.Handler{
		Path:   s.backend,
		Dir:    s.root,
		Stderr: s.stderr,
		Env: []string{
			"GIT_PROJECT_ROOT=" + s.root,
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER=" + remoteUser,
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + s.home,
		},
	}
	h.ServeHTTP(w, r)
}
