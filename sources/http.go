package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// HTTP polls one URL every interval for one manifest or a list. A 304 to
// If-None-Match does no decoding. The body is limited to manifest.MaxSize
// while it is read; the whole request has the source's timeout. TLS
// certificates are always verified. Credentials in the URL are sent as
// basic auth; they and the configured headers go to the configured origin
// only: a redirect elsewhere (another host or port, or from https to
// http) is followed without them.
type HTTP struct {
	cfg     config.Source
	client  *http.Client
	log     *slog.Logger
	trigger chan struct{}
	// display is the URL as errors show it: without its userinfo.
	display string
	// url is the URL requested, without its userinfo; user and password
	// are what the userinfo held (hasAuth: it held any).
	url            string
	user, password string
	hasAuth        bool

	compose  *project.Renderer
	etag     string
	lastRev  string
	lastSet  []manifest.Sourced
	haveLast bool

	clock clock.Clock
}

// NewHTTP returns the HTTP source for cfg.
func NewHTTP(cfg config.Source, log *slog.Logger) *HTTP {
	h := &HTTP{cfg: cfg, log: log.With("source", cfg.Name), trigger: make(chan struct{}, 1), display: redact.URL(cfg.URL), clock: clock.Real{}}
	h.url, h.user, h.password, h.hasAuth = redact.Split(cfg.URL)
	h.client = &http.Client{Timeout: cfg.Timeout, CheckRedirect: h.checkRedirect}
	return h
}

// WithCompose sets the renderer of a Compose file the source delivers
// (nil: such a body is an error) and returns it; call it before Run.
func (h *HTTP) WithCompose(c *project.Renderer) *HTTP {
	h.compose = c
	return h
}

// WithClock makes the source poll on c (nil: clock.Real) and returns it;
// call it before Run. A request's timeout (cfg.Timeout) stays the
// client's, on the real clock.
func (h *HTTP) WithClock(c clock.Clock) *HTTP {
	h.clock = clock.Or(c)
	return h
}

// maxRedirects is the redirects one fetch follows (net/http's default).
const maxRedirects = 10

// checkRedirect strips the configured headers and the basic auth from a
// redirect that leaves the configured origin. net/http copies every header
// of the first request to each redirect (dropping only Authorization and
// cookies, and only for another host name), so each hop is weighed
// against the first request.
func (h *HTTP) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if !sameOrigin(via[0].URL, req.URL) {
		for k := range h.cfg.Headers {
			req.Header.Del(k)
		}
		req.Header.Del("Authorization")
	}
	return nil
}

// Trigger asks for a poll now (POST /sync); calls coalesce.
func (h *HTTP) Trigger() {
	select {
	case h.trigger <- struct{}{}:
	default:
	}
}

// Name implements Source.
func (h *HTTP) Name() string { return h.cfg.Name }

// Type implements Source.
func (h *HTTP) Type() string { return config.TypeHTTP }

// Read implements Source: one GET, for `hostlet validate` and `hostlet diff`.
func (h *HTTP) Read(ctx context.Context) (manifest.Snapshot, error) {
	snap, _, err := h.fetch(ctx)
	return snap, err
}

// Run implements Source.
func (h *HTTP) Run(ctx context.Context, out chan<- Update) {
	t := h.clock.NewTicker(h.cfg.Interval)
	defer t.Stop()
	for {
		u, changed := h.poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if changed && !send(ctx, out, u) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		case <-h.trigger:
		}
	}
}

// poll fetches once. It reports whether the update is worth sending: a new
// set, a new error, or an unchanged set (so the merge records the success).
func (h *HTTP) poll(ctx context.Context) (Update, bool) {
	start := h.clock.Now()
	snap, notModified, err := h.fetch(ctx)
	took := h.clock.Since(start)
	if err != nil {
		// Every failure is sent (hostlet_source_errors_total counts
		// failures); the merge takes a repeated error as one.
		return Update{Source: h.cfg.Name, Err: err, Took: took}, true
	}
	if notModified {
		return Update{Source: h.cfg.Name, Revision: h.lastRev, Files: 1, Manifests: h.lastSet, Took: took}, true
	}
	h.lastRev, h.lastSet, h.haveLast = snap.Revision, snap.Manifests, true
	return Update{Source: h.cfg.Name, Revision: snap.Revision, Files: 1, Manifests: snap.Manifests, Took: took}, true
}

// fetch does one GET. notModified is true on a 304 to our ETag.
func (h *HTTP) fetch(ctx context.Context) (snap manifest.Snapshot, notModified bool, err error) {
	snap = manifest.Snapshot{Name: h.cfg.Name, Type: config.TypeHTTP}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.url, nil)
	if err != nil {
		return snap, false, fmt.Errorf("source %s: GET %s: %w", h.cfg.Name, h.display, redact.Error(err, h.cfg.URL, h.url))
	}
	if h.hasAuth {
		req.SetBasicAuth(h.user, h.password)
	}
	for k, v := range h.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "application/yaml, application/json, text/plain")
	if h.etag != "" && h.haveLast {
		req.Header.Set("If-None-Match", h.etag)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		// A *url.Error repeats the method and the URL: keep its cause.
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return snap, false, fmt.Errorf("GET %s: %w", h.display, redact.Error(err, h.cfg.URL, h.url))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && h.haveLast:
		return snap, true, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return snap, false, fmt.Errorf("GET %s: %s", h.display, resp.Status)
	}
	if resp.ContentLength > manifest.MaxSize {
		return snap, false, fmt.Errorf("GET %s: body of %d bytes: %w of %d bytes", h.display, resp.ContentLength, manifest.ErrTooLarge, manifest.MaxSize)
	}
	body, err := readBody(resp.Body, manifest.MaxSize)
	if err != nil {
		if errors.Is(err, manifest.ErrTooLarge) {
			return snap, false, fmt.Errorf("GET %s: body %w", h.display, err)
		}
		return snap, false, fmt.Errorf("GET %s: read body: %w", h.display, err)
	}
	ms, err := decodeBody(ctx, body, manifest.Origin{Source: h.cfg.Name}, h.compose)
	if err != nil {
		return snap, false, err
	}
	if ms, err = project.TranslateKube(ctx, h.compose, h.cfg.Name, ms, nil); err != nil {
		return snap, false, err
	}
	sum := sha256.Sum256(body)
	snap.Revision = "sha256:" + hex.EncodeToString(sum[:])[:16]
	h.etag = resp.Header.Get("ETag")
	snap.Files, snap.Manifests = 1, ms
	return snap, false, nil
}

// readBody reads r up to limit bytes and fails with manifest.ErrTooLarge,
// without reading further, when r holds more. It reads in blocks joined at
// the end, so a body refused at the limit costs the limit in memory, not
// the garbage of a slice grown by copying (two to three times as much).
func readBody(r io.Reader, limit int64) ([]byte, error) {
	const block = 64 << 10
	var (
		blocks [][]byte
		total  int64
	)
	for {
		buf := make([]byte, min(block, limit+1-total))
		n, err := io.ReadFull(r, buf)
		total += int64(n)
		blocks = append(blocks, buf[:n])
		if total > limit {
			return nil, fmt.Errorf("%w of %d bytes", manifest.ErrTooLarge, limit)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return bytes.Join(blocks, nil), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// sameOrigin reports whether a redirect from one URL to another stays with
// the configured server: the same host name and port, and no downgrade
// from https.
func sameOrigin(from, to *url.URL) bool {
	return strings.EqualFold(from.Hostname(), to.Hostname()) && portOf(from) == portOf(to) &&
		from.Scheme == to.Scheme
}

func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}
