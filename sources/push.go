package sources

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	gosync "sync"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/validate"
)

// MaxPushSize is the largest body POST /manifests accepts.
const MaxPushSize = 1 << 20

// Push is the push source: each POST /manifests replaces its whole set.
// The body is decoded and validated before it is taken; an invalid body is
// refused with every error and changes nothing. A valid body is answered
// only once the merge took it and saved it durably (the update carries a
// Reply): 200 with the manifests the merge accepted and those it rejected
// (a duplicate id or a host-port conflict with another source); 507 when
// stateDir is full and 500 when the set could not be saved otherwise (the
// set before stays in effect); 409 when the merge refused the whole set
// (an empty set while sync.allowEmpty is off).
type Push struct {
	cfg     config.Source
	opts    validate.Options
	log     *slog.Logger
	updates chan Update
	// stopped is closed when Run returns: a POST then gets 503 instead of
	// waiting for a reader that is gone.
	stopped  chan struct{}
	stopOnce gosync.Once
	// compose translates pushed Kubernetes objects (nil: refused).
	compose *project.Renderer
}

// WithCompose sets the renderer whose helper translates pushed
// Kubernetes objects.
func (p *Push) WithCompose(r *project.Renderer) *Push {
	p.compose = r
	return p
}

// NewPush returns the push source for cfg.
func NewPush(cfg config.Source, opts validate.Options, log *slog.Logger) *Push {
	return &Push{cfg: cfg, opts: opts, log: log.With("source", cfg.Name), updates: make(chan Update), stopped: make(chan struct{})}
}

// Name implements Source.
func (p *Push) Name() string { return p.cfg.Name }

// Type implements Source.
func (p *Push) Type() string { return config.TypePush }

// Read implements Source: a push source holds only what is pushed to the
// running hostlet, so a read of its own finds nothing (ErrPushOnly).
func (p *Push) Read(context.Context) (manifest.Snapshot, error) {
	return manifest.Snapshot{Name: p.cfg.Name, Type: config.TypePush}, ErrPushOnly
}

// Run implements Source: it forwards what is pushed.
func (p *Push) Run(ctx context.Context, out chan<- Update) {
	defer p.stopOnce.Do(func() { close(p.stopped) })
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-p.updates:
			if !send(ctx, out, u) {
				return
			}
		}
	}
}

// PushResponse is the JSON answer of POST /manifests.
type PushResponse struct {
	Accepted []string `json:"accepted,omitempty"`
	// Rejected lists the manifests the merge turned down although they are
	// valid: a duplicate id or a host-port conflict with another source.
	Rejected []validate.Rejection `json:"rejected,omitempty"`
	Revision string               `json:"revision,omitempty"`
	Errors   []*manifest.Error    `json:"errors,omitempty"`
	Error    string               `json:"error,omitempty"`
}

// Handler serves POST /manifests. authorized checks the bearer token.
//
// A push is read, decoded and checked on its own (every error of it is
// answered at once), then handed to the agent's update loop, and answered
// with what the merge made of it once it is saved.
func (p *Push) Handler(authorized func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hostlet"`)
			writePush(w, http.StatusUnauthorized, PushResponse{Error: "missing or wrong bearer token"})
			return
		}
		body, ok := readPush(w, r)
		if !ok {
			return
		}
		ms, errs := p.check(r.Context(), body)
		if len(errs) > 0 {
			writePush(w, http.StatusBadRequest, PushResponse{Errors: errs})
			return
		}
		sum := sha256.Sum256(body)
		rev := "sha256:" + hex.EncodeToString(sum[:])[:16]
		res, ok := p.deliver(w, r, Update{Source: p.cfg.Name, Revision: rev, Files: 1, Manifests: ms})
		if !ok {
			return
		}
		p.answer(w, rev, len(ms), res)
	})
}

// readPush reads a push's body, at most MaxPushSize bytes; when it cannot,
// it answers the request and returns false.
func readPush(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > MaxPushSize {
		writePush(w, http.StatusRequestEntityTooLarge, PushResponse{Error: fmt.Sprintf("body of %d bytes is over the limit of %d", r.ContentLength, MaxPushSize)})
		return nil, false
	}
	body, err := manifest.ReadLimited(http.MaxBytesReader(w, r.Body, MaxPushSize+1), MaxPushSize)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.Is(err, manifest.ErrTooLarge) || errors.As(err, &mbe) {
			writePush(w, http.StatusRequestEntityTooLarge, PushResponse{Error: fmt.Sprintf("body over the limit of %d bytes", MaxPushSize)})
			return nil, false
		}
		writePush(w, http.StatusBadRequest, PushResponse{Error: "read body: " + err.Error()})
		return nil, false
	}
	return body, true
}

// check decodes a push's body and validates it as a set of its own: the
// manifests, and every error found in them.
func (p *Push) check(ctx context.Context, body []byte) ([]manifest.Sourced, []*manifest.Error) {
	var (
		ms   []manifest.Sourced
		errs []*manifest.Error
	)
	// "[]" is an explicit empty set: it removes every pushed pod (when
	// sync.allowEmpty permits).
	if string(bytes.TrimSpace(body)) != "[]" {
		var derr error
		ms, derr = manifest.Decode(body, manifest.Origin{Source: p.cfg.Name})
		errs = validate.Flatten(derr)
		var kerr error
		ms, kerr = project.TranslateKube(ctx, p.compose, p.cfg.Name, ms, nil)
		errs = append(errs, validate.Flatten(kerr)...)
	}
	checked := validate.Set([]manifest.Snapshot{{Name: p.cfg.Name, Manifests: ms}}, p.opts)
	for _, rj := range checked.Rejected {
		errs = append(errs, rj.Errors...)
	}
	return ms, errs
}

// deliver hands u to the update loop and waits for what applying it did;
// when hostlet stops (or the client goes) first, it answers the request
// and returns false.
func (p *Push) deliver(w http.ResponseWriter, r *http.Request, u Update) (Applied, bool) {
	reply := make(chan Applied, 1)
	u.Reply = reply
	select {
	case p.updates <- u:
	case <-r.Context().Done():
		writePush(w, http.StatusServiceUnavailable, PushResponse{Error: "hostlet is stopping"})
		return Applied{}, false
	case <-p.stopped:
		writePush(w, http.StatusServiceUnavailable, PushResponse{Error: "hostlet is stopping"})
		return Applied{}, false
	}
	select {
	case res := <-reply:
		return res, true
	case <-r.Context().Done():
		writePush(w, http.StatusServiceUnavailable, PushResponse{Error: "hostlet is stopping"})
		return Applied{}, false
	case <-p.stopped:
		select {
		case res := <-reply:
			return res, true
		default:
			writePush(w, http.StatusServiceUnavailable, PushResponse{Error: "hostlet is stopping; the push may not be applied"})
			return Applied{}, false
		}
	}
}

// answer answers a push of revision rev (n manifests) with what applying
// it did.
func (p *Push) answer(w http.ResponseWriter, rev string, n int, res Applied) {
	switch {
	case errors.Is(res.Err, ErrNotSaved) && IsNoSpace(res.Err):
		p.log.Warn("push refused: stateDir is full", "revision", rev, "error", res.Err)
		writePush(w, http.StatusInsufficientStorage, PushResponse{Revision: rev, Error: "not applied: " + res.Err.Error()})
		return
	case errors.Is(res.Err, ErrNotSaved):
		p.log.Warn("push refused: cannot save it", "revision", rev, "error", res.Err)
		writePush(w, http.StatusInternalServerError, PushResponse{Revision: rev, Error: "not applied: " + res.Err.Error()})
		return
	case res.Err != nil:
		writePush(w, http.StatusConflict, PushResponse{Revision: rev, Error: "not applied: " + ErrorText(res.Err)})
		return
	}
	resp := PushResponse{Revision: rev, Accepted: res.Accepted, Rejected: res.Rejected}
	p.log.Info("manifests pushed", "revision", rev, "manifests", n, "accepted", len(res.Accepted), "rejected", len(res.Rejected))
	writePush(w, http.StatusOK, resp)
}

func writePush(w http.ResponseWriter, code int, v PushResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
