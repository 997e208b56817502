package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// ErrBudget is returned (wrapped) once a registry's request budget for the
// run is spent.
var ErrBudget = errors.New("request budget for this registry spent")

// maxBody bounds one answer of a registry (a page of tags, a manifest).
const maxBody = 8 << 20

// politeTransport counts and bounds the requests to each registry host,
// waits out 429 answers (their Retry-After, else a doubling backoff) and
// caps every answer's body.
type politeTransport struct {
	base     http.RoundTripper
	budget   int
	retries  int
	maxWait  time.Duration
	minWait  time.Duration
	sleep    func(ctx context.Context, d time.Duration) error
	mu       sync.Mutex
	requests map[string]int
	waited   map[string]int
}

func (t *politeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	wait := t.minWait
	for attempt := 0; ; attempt++ {
		if err := t.spend(req.URL.Host); err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusTooManyRequests || attempt >= t.retries || req.Body != nil && req.GetBody == nil {
			resp.Body = &cappedBody{rc: resp.Body, left: maxBody, host: req.URL.Host}
			return resp, nil
		}
		d := retryAfter(resp.Header.Get("Retry-After"), time.Now(), wait)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if d > t.maxWait {
			return nil, fmt.Errorf("%s answered 429 asking to wait %s, more than %s", req.URL.Host, d.Round(time.Second), t.maxWait)
		}
		t.mu.Lock()
		t.waited[req.URL.Host]++
		t.mu.Unlock()
		if err := t.sleep(req.Context(), d); err != nil {
			return nil, err
		}
		wait = min(2*wait, t.maxWait)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// spend takes one request of host's budget.
func (t *politeTransport) spend(host string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.requests[host] >= t.budget {
		return fmt.Errorf("%s: %w (%d requests)", host, ErrBudget, t.budget)
	}
	t.requests[host]++
	return nil
}

// retryAfter reads a Retry-After header (seconds, or an HTTP date), else
// gives fallback.
func retryAfter(h string, now time.Time, fallback time.Duration) time.Duration {
	if h == "" {
		return fallback
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		// Clamped before the multiplication, which would overflow: a
		// day is beyond any bound a run takes.
		return time.Duration(min(s, 86400)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return fallback
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// cappedBody fails a read past the answer size limit.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
	host string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, err := b.rc.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, fmt.Errorf("%s: an answer larger than %d bytes", b.host, maxBody)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }
