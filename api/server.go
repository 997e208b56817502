package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/events"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// Syncer is what the API reads of the reconciler.
type Syncer interface {
	Report() hsync.Report
	Healthy(window time.Duration) bool
}

// SourceStates returns the sources' current status.
type SourceStates func() []sources.Status

// Options configure the server.
type Options struct {
	Hostname string
	Version  string
	// Token guards POST endpoints (and every endpoint but /healthz on a
	// non-loopback address); "" turns POST endpoints off.
	Token string
	// Loopback is true when the listener is on a loopback address: GET
	// endpoints are then open.
	Loopback bool
	// HealthWindow: /healthz fails when no sync finished or started within it.
	HealthWindow time.Duration
	Machine      Machine
	Now          func() time.Time
}

// Server is hostlet's HTTP API.
type Server struct {
	opts    Options
	syncer  Syncer
	sources SourceStates
	events  *events.Log
	log     *slog.Logger
	mux     *http.ServeMux
}

// New returns the API server's handler.
func New(opts Options, s Syncer, src SourceStates, ev *events.Log, log *slog.Logger) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	srv := &Server{opts: opts, syncer: s, sources: src, events: ev, log: log, mux: http.NewServeMux()}
	srv.mux.HandleFunc("GET /healthz", srv.healthz)
	srv.mux.Handle("GET /status", srv.read(http.HandlerFunc(srv.status)))
	srv.mux.Handle("GET /events", srv.read(http.HandlerFunc(srv.listEvents)))
	return srv
}

// MaxSyncBody is the largest webhook body POST /sync reads (to check its
// signature).
const MaxSyncBody = 1 << 20

// HandleSync serves POST /sync: fetch every source and sync now. It takes
// the bearer token, or a GitHub/Gitea-style HMAC-SHA256 signature of the
// body in X-Hub-Signature-256 keyed with the same token. Without a token
// configured the endpoint is off (404).
func (s *Server) HandleSync(trigger func()) {
	if s.opts.Token == "" {
		return
	}
	s.mux.HandleFunc("POST /sync", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxSyncBody))
		if err != nil {
			writeError(w, http.StatusRequestEntityTooLarge, "body over the limit")
			return
		}
		if !s.Authorized(r) && !s.validSignature(r.Header.Get("X-Hub-Signature-256"), body) {
			writeError(w, http.StatusUnauthorized, "a bearer token or a valid X-Hub-Signature-256 is required")
			return
		}
		trigger()
		writeJSON(w, http.StatusAccepted, map[string]string{"status": "sync requested"})
	})
}

func (s *Server) validSignature(header string, body []byte) bool {
	sig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || s.opts.Token == "" {
		return false
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(s.opts.Token))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}

// HandleRead adds a GET endpoint with the read guard of /status: open on
// loopback, else the token.
func (s *Server) HandleRead(pattern string, h http.Handler) { s.mux.Handle(pattern, s.read(h)) }

// Handle adds a handler (for endpoints other packages own, such as the
// push source and /sync).
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// ServeHTTP implements http.Handler. The mux's own answers for an unknown
// endpoint (404) or method (405) are JSON errors like every other error of
// the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := s.mux.Handler(r); pattern == "" {
		w = &muxErrors{ResponseWriter: w, r: r}
	}
	s.mux.ServeHTTP(w, r)
}

// muxErrors turns the mux's plain-text 404 and 405 into JSON errors.
type muxErrors struct {
	http.ResponseWriter
	r        *http.Request
	replaced bool
}

func (m *muxErrors) WriteHeader(code int) {
	switch code {
	case http.StatusNotFound:
		m.replaced = true
		writeError(m.ResponseWriter, code, "no endpoint "+m.r.Method+" "+m.r.URL.Path)
	case http.StatusMethodNotAllowed:
		m.replaced = true
		writeError(m.ResponseWriter, code, "method "+m.r.Method+" not allowed on "+m.r.URL.Path+"; allowed: "+m.Header().Get("Allow"))
	default:
		m.ResponseWriter.WriteHeader(code)
	}
}

func (m *muxErrors) Write(b []byte) (int, error) {
	if m.replaced {
		return len(b), nil
	}
	return m.ResponseWriter.Write(b)
}

// HTTPServer wraps the handler with timeouts and header limits, so a slow
// client cannot hold connections open.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
}

// IsLoopback reports whether a listen address is on loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// read guards a GET endpoint: open on loopback, else the token.
func (s *Server) read(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opts.Loopback && !s.Authorized(r) {
			writeError(w, http.StatusUnauthorized, "a bearer token is required")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Authorized reports whether r carries the bearer token (constant-time).
func (s *Server) Authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return false
	}
	// The scheme is case-insensitive (RFC 7235 section 2.1); the token is not.
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) == 1
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	if s.syncer.Healthy(s.opts.HealthWindow) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	writeError(w, http.StatusServiceUnavailable, "the sync loop has not run within "+s.opts.HealthWindow.String())
}

// Document builds the status document.
func (s *Server) Document() Document {
	rep := s.syncer.Report()
	doc := Document{
		Hostname: s.opts.Hostname, Version: s.opts.Version, Time: s.opts.Now().UTC(),
		LastSync: rep.LastSync, Pods: rep.Pods, Rejected: rep.Rejected, Machine: s.opts.Machine,
	}
	if s.sources != nil {
		doc.Sources = s.sources()
	}
	// Lists are [] when empty, never null.
	if doc.Sources == nil {
		doc.Sources = []sources.Status{}
	}
	if doc.Pods == nil {
		doc.Pods = []hsync.PodStatus{}
	}
	if doc.Rejected == nil {
		doc.Rejected = []validate.Rejection{}
	}
	return doc
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Document())
}

func (s *Server) listEvents(w http.ResponseWriter, _ *http.Request) {
	list := s.events.List()
	if list == nil {
		list = []events.Event{}
	}
	writeJSON(w, http.StatusOK, list)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError writes a JSON error body.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
