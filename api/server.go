package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/textcap"
	hruntime "github.com/hostlet/hostlet/runtime"
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
	// Labels are the host's labels (the config's labels).
	Labels  map[string]string
	Version string
	// Token guards POST endpoints (and every endpoint but /healthz on a
	// non-loopback address); "" turns POST endpoints off.
	Token string
	// Loopback is true when the listener is on a loopback address: GET
	// endpoints are then open to requests that name a loopback host (see
	// openRead).
	Loopback bool
	// HealthWindow: /healthz fails when no sync finished or started within it.
	HealthWindow time.Duration
	Machine      Machine
	// Engine is the engine hostlet drives and its limits (optional).
	Engine *hruntime.Engine
	// Clock gives the status document's and /stats' time; nil means
	// clock.Real. (A webhook's read deadline is the connection's, on the
	// real clock.)
	Clock clock.Clock
	// WebhookConcurrency caps the POST /sync requests, signed but without
	// the bearer token, whose bodies are read at once (optional; 0 means
	// DefaultWebhookConcurrency).
	WebhookConcurrency int
	// WebhookReadTimeout bounds the reading of such a request's body
	// (optional; 0 means DefaultWebhookReadTimeout).
	WebhookReadTimeout time.Duration
	// EnvHasher hides the engine's env values in GET /pods/{id} (the
	// Syncer's, so they read as in /status); nil hides them entirely.
	EnvHasher *hsync.EnvHasher
	// StateErrors returns the state file problems for the status document
	// (optional).
	StateErrors func() []atomicfile.Problem
	// Overdue reports the work running past its deadline (optional, see
	// Overdue): /healthz fails while there is any, and an overdue sync is
	// the status document's lastSync.error.
	Overdue func() Overdue
}

// Limits of the requests that are unauthenticated until their body is
// read: POST /sync with an X-Hub-Signature-256 and no bearer token.
const (
	// DefaultWebhookConcurrency: at most this many are read at once; one
	// more is answered 503 at once, unread. A git server sends one push
	// event at a time per hook.
	DefaultWebhookConcurrency = 4
	// DefaultWebhookReadTimeout: the body must arrive within this, from
	// the moment the handler starts reading (408 after).
	DefaultWebhookReadTimeout = 10 * time.Second
)

// SignatureHeader carries the HMAC-SHA256 of a webhook's body, keyed with
// the token, as GitHub, Gitea and Forgejo send it: "sha256=" and 64 hex
// digits.
const SignatureHeader = "X-Hub-Signature-256"

// Server is hostlet's HTTP API.
type Server struct {
	opts    Options
	syncer  Syncer
	sources SourceStates
	events  *eventlog.Log
	log     *slog.Logger
	mux     *http.ServeMux
	// webhooks holds one token per signed POST /sync being read.
	webhooks chan struct{}
}

// New returns the API server's handler.
func New(opts Options, s Syncer, src SourceStates, ev *eventlog.Log, log *slog.Logger) *Server {
	opts.Clock = clock.Or(opts.Clock)
	if opts.WebhookConcurrency <= 0 {
		opts.WebhookConcurrency = DefaultWebhookConcurrency
	}
	if opts.WebhookReadTimeout <= 0 {
		opts.WebhookReadTimeout = DefaultWebhookReadTimeout
	}
	srv := &Server{
		opts: opts, syncer: s, sources: src, events: ev, log: log, mux: http.NewServeMux(),
		webhooks: make(chan struct{}, opts.WebhookConcurrency),
	}
	srv.mux.HandleFunc("GET /healthz", srv.healthz)
	srv.mux.Handle("GET /status", srv.read(http.HandlerFunc(srv.status)))
	srv.mux.Handle("GET /events", srv.read(http.HandlerFunc(srv.listEvents)))
	return srv
}

// MaxSyncBody is the largest body POST /sync takes. The body is never
// kept: with the bearer token it is drained, with a signature it is
// streamed through the MAC, so a request costs a copy buffer whatever its
// size. GitHub caps payloads at 25 MB, and a push event lists up to 5000
// paths in each of added, removed and modified: a push that touches many
// files exceeds 200 kB (jquery/node-notifier-server#2 raised its limit to
// 1 MiB for that reason). A webhook refused here only loses its trigger:
// the sources' own polling still picks the change up.
const MaxSyncBody = 1 << 20

// HandleSync serves POST /sync: fetch every source and sync now. It takes
// the bearer token, or a GitHub/Gitea-style HMAC-SHA256 signature of the
// body in X-Hub-Signature-256 keyed with the same token. Without a token
// configured the endpoint is off (404).
//
// POST /sync?force=1 (or force=true) also applies now what waits for a
// maintenance window: trigger is called with force true. Only the bearer
// token may force; a signed request that asks to is refused (403,
// unread): a git host's webhook never bypasses the windows.
//
// Authentication comes before the body: a request with neither the
// bearer token nor a well-formed signature header is refused (401) unread.
// A signed request is unauthenticated until its body is read, so at most
// WebhookConcurrency are read at once (503 beyond, unread), each within
// WebhookReadTimeout (408) and MaxSyncBody (413).
func (s *Server) HandleSync(trigger func(force bool)) {
	if s.opts.Token == "" {
		return
	}
	s.mux.HandleFunc("POST /sync", func(w http.ResponseWriter, r *http.Request) {
		if s.Authorized(r) {
			force, err := forceParam(r)
			if err != nil {
				refuse(w, http.StatusBadRequest, err.Error())
				return
			}
			// The token is the proof; the body is not used.
			if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, MaxSyncBody)); err != nil {
				refuseBody(w, err)
				return
			}
			trigger(force)
			writeJSON(w, http.StatusAccepted, syncAnswer(force))
			return
		}
		want, ok := parseSignature(r.Header.Get(SignatureHeader))
		if !ok {
			refuse(w, http.StatusUnauthorized, "a bearer token or a valid "+SignatureHeader+" is required")
			return
		}
		if force, err := forceParam(r); err != nil {
			refuse(w, http.StatusBadRequest, err.Error())
			return
		} else if force {
			refuse(w, http.StatusForbidden, "force needs the bearer token: a signed webhook never bypasses maintenance windows")
			return
		}
		if r.ContentLength > MaxSyncBody {
			refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, MaxSyncBody))
			return
		}
		select {
		case s.webhooks <- struct{}{}:
			defer func() { <-s.webhooks }()
		default:
			w.Header().Set("Retry-After", "5")
			refuse(w, http.StatusServiceUnavailable, "too many webhooks being read; retry later")
			return
		}
		// Not supported only where there is no connection (a recorder).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.opts.WebhookReadTimeout))
		// Streamed: the body is never held in memory.
		mac := hmac.New(sha256.New, []byte(s.opts.Token))
		if _, err := io.Copy(mac, http.MaxBytesReader(w, r.Body, MaxSyncBody)); err != nil {
			refuseBody(w, err)
			return
		}
		if !hmac.Equal(want, mac.Sum(nil)) {
			refuse(w, http.StatusUnauthorized, "a bearer token or a valid "+SignatureHeader+" is required")
			return
		}
		trigger(false)
		writeJSON(w, http.StatusAccepted, syncAnswer(false))
	})
}

// SyncAnswer is POST /sync's answer.
type SyncAnswer struct {
	Status string `json:"status"`
	// Forced: the syncs of the next minute apply every change,
	// maintenance windows or not.
	Forced bool `json:"forced,omitempty"`
}

func syncAnswer(force bool) SyncAnswer {
	if force {
		return SyncAnswer{Status: "sync requested, forced: changes apply now, maintenance windows or not (holds still hold)", Forced: true}
	}
	return SyncAnswer{Status: "sync requested"}
}

// forceParam reads POST /sync's force parameter: 1 or true (or present
// without a value) forces; absent, 0 or false does not.
func forceParam(r *http.Request) (bool, error) {
	q := r.URL.Query()
	if !q.Has("force") {
		return false, nil
	}
	v := q.Get("force")
	if v == "" {
		return true, nil
	}
	force, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("force=%q: want 1 or true (0 or false: not forced)", textcap.Truncate(v, 64))
	}
	return force, nil
}

// parseSignature returns the MAC of a well-formed X-Hub-Signature-256
// value: "sha256=" and 64 hex digits.
func parseSignature(header string) ([]byte, bool) {
	sig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(sig) != 2*sha256.Size {
		return nil, false
	}
	mac, err := hex.DecodeString(sig)
	if err != nil {
		return nil, false
	}
	return mac, true
}

// refuse answers a request whose body is not (or not all) read, and
// closes the connection, so the server does not read the rest either.
func refuse(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Connection", "close")
	if code == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hostlet"`)
	}
	writeError(w, code, msg)
}

// refuseBody answers a body that could not be read: over the limit, too
// slow, or cut.
func refuseBody(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	var nerr net.Error
	switch {
	case errors.As(err, &mbe):
		refuse(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body over the limit of %d bytes", MaxSyncBody))
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &nerr) && nerr.Timeout():
		refuse(w, http.StatusRequestTimeout, "body not received in time")
	default:
		refuse(w, http.StatusBadRequest, "read body: "+err.Error())
	}
}

// HandleRead adds a GET endpoint with the read guard of /status: open to
// loopback clients (see openRead), else the token.
func (s *Server) HandleRead(pattern string, h http.Handler) { s.mux.Handle(pattern, s.read(h)) }

// Handle adds a handler for an endpoint another package owns, such as the
// push source's POST /manifests. A GET (or HEAD) pattern gets the read
// guard of HandleRead; any other pattern needs the bearer token, checked
// before h runs, so no body is read for a request without it.
func (s *Server) Handle(pattern string, h http.Handler) {
	method, _, _ := strings.Cut(pattern, " ")
	if method == http.MethodGet || method == http.MethodHead {
		s.mux.Handle(pattern, s.read(h))
		return
	}
	s.mux.Handle(pattern, s.write(h))
}

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

// IsLoopbackHost reports whether a Host header value (host or host:port)
// names the loopback interface: "localhost" or a name under it
// (RFC 6761: never delegated, resolved to loopback by browsers without
// DNS), each also with the root's trailing dot, case-insensitive; or a
// literal loopback address: 127.0.0.0/8, [::1], [::ffff:127.x.y.z].
// Names that merely resolve to loopback are not: that is what DNS
// rebinding forges.
func IsLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if inner, ok := strings.CutPrefix(host, "["); ok {
		if host, ok = strings.CutSuffix(inner, "]"); !ok {
			return false
		}
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return false
	}
	return ip.Unmap().IsLoopback()
}

// proxyHeaders are set by reverse proxies (nginx, Caddy, Traefik,
// HAProxy, Apache); a local client sends none of them.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Via"}

// openRead reports whether a GET may be served without the token: the
// listener is on loopback, the Host header names loopback (a page whose
// name was rebound to 127.0.0.1 sends its own name), and no proxy's
// forwarding header is present.
//
// A reverse proxy in front of a loopback listener normally passes the
// public name as Host (Caddy, Traefik; nginx with proxy_set_header Host
// $host), or adds X-Forwarded-For / Forwarded / Via, so its requests need
// the token. One that sends Host: 127.0.0.1 and adds no forwarding header
// (nginx's bare proxy_pass) cannot be told from a local client: such a
// proxy must add X-Forwarded-For, or hostlet must listen where only the
// proxy reaches it with a token configured.
func (s *Server) openRead(r *http.Request) bool {
	if !s.opts.Loopback || !IsLoopbackHost(r.Host) {
		return false
	}
	for _, h := range proxyHeaders {
		if _, ok := r.Header[h]; ok {
			return false
		}
	}
	return true
}

// read guards a GET endpoint: open to loopback clients, else the token.
func (s *Server) read(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.openRead(r) && !s.Authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hostlet"`)
			writeError(w, http.StatusUnauthorized, "a bearer token is required (GET endpoints are open only to loopback clients that name a loopback host)")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// write guards an endpoint that changes something: the bearer token,
// checked before the handler reads anything.
func (s *Server) write(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.Authorized(r) {
			refuse(w, http.StatusUnauthorized, "missing or wrong bearer token")
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
	if o := s.overdue(); len(o.all()) > 0 {
		writeError(w, http.StatusServiceUnavailable, strings.Join(o.all(), "; "))
		return
	}
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
		Hostname: s.opts.Hostname, Labels: s.opts.Labels, Version: s.opts.Version, Time: s.opts.Clock.Now().UTC(),
		LastSync: rep.LastSync, Window: rep.Window, Pods: rep.Pods, Rejected: rep.Rejected, Machine: s.opts.Machine,
		Engine: s.opts.Engine,
	}
	if s.sources != nil {
		doc.Sources = s.sources()
	}
	if o := s.overdue(); o.Sync != "" && doc.LastSync.Error == "" {
		doc.LastSync.Error = o.Sync
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
	doc.StateErrors = []atomicfile.Problem{}
	if s.opts.StateErrors != nil {
		doc.StateErrors = append(doc.StateErrors, s.opts.StateErrors()...)
	}
	return doc
}

func (s *Server) status(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Document())
}

func (s *Server) listEvents(w http.ResponseWriter, _ *http.Request) {
	list := s.events.List()
	if list == nil {
		list = []eventlog.Event{}
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
