package registry

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Defaults of Options.
const (
	DefaultMaxTags       = 5000
	DefaultBudget        = 500
	DefaultRetries       = 5
	DefaultMaxRetryAfter = time.Minute
	DefaultTimeout       = 3 * time.Minute
	defaultPageSize      = 1000
)

// Options tune a Client; zero values take the defaults.
type Options struct {
	// MaxTags caps a repository's listing (DefaultMaxTags); a listing
	// cut there says so (Listing.Capped).
	MaxTags int
	// Budget is the most requests to one registry in a run.
	Budget int
	// Retries is how many 429 answers one request waits out.
	Retries int
	// MaxRetryAfter: a 429 asking to wait longer fails the request.
	MaxRetryAfter time.Duration
	// Keychain finds credentials (authn.DefaultKeychain: the Docker
	// config at $DOCKER_CONFIG and its credential helpers).
	Keychain authn.Keychain
	// Transport is the HTTP transport under the client's own.
	Transport http.RoundTripper
	// MinBackoff is the first wait after a 429 without Retry-After.
	MinBackoff time.Duration
	// PageSize is how many tags one listing request asks for (1000).
	PageSize int
	// Timeout bounds one repository's listing, or one digest, waits for
	// 429 answers included (DefaultTimeout): a registry that stops
	// answering fails only its images.
	Timeout time.Duration
}

// Listing is a repository's tags as far as the cap.
type Listing struct {
	Tags []string
	// Capped: the repository has more tags than MaxTags; the rest were
	// not read.
	Capped bool
}

// Client reads registries for one run, caching every answer.
type Client struct {
	opts      Options
	transport *politeTransport
	puller    *remote.Puller

	listings onceCalls[Listing]
	digests  onceCalls[string]
}

// onceCalls runs a call once per key and gives every caller its answer.
type onceCalls[T any] struct {
	mu    sync.Mutex
	calls map[string]*onceCall[T]
}

type onceCall[T any] struct {
	done  chan struct{}
	value T
	err   error
}

// do returns fn's answer for key, calling fn only the first time; a
// caller whose ctx ends stops waiting.
func (o *onceCalls[T]) do(ctx context.Context, key string, fn func() (T, error)) (T, error) {
	o.mu.Lock()
	if o.calls == nil {
		o.calls = map[string]*onceCall[T]{}
	}
	call, ok := o.calls[key]
	if !ok {
		call = &onceCall[T]{done: make(chan struct{})}
		o.calls[key] = call
	}
	o.mu.Unlock()
	if !ok {
		call.value, call.err = fn()
		close(call.done)
	}
	select {
	case <-call.done:
		return call.value, call.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// New makes a Client.
func New(opts Options) (*Client, error) {
	opts.MaxTags = cmpOr(opts.MaxTags, DefaultMaxTags)
	opts.Budget = cmpOr(opts.Budget, DefaultBudget)
	opts.Retries = cmpOr(opts.Retries, DefaultRetries)
	opts.MaxRetryAfter = cmpOr(opts.MaxRetryAfter, DefaultMaxRetryAfter)
	opts.MinBackoff = cmpOr(opts.MinBackoff, time.Second)
	opts.PageSize = cmpOr(opts.PageSize, defaultPageSize)
	opts.Timeout = cmpOr(opts.Timeout, DefaultTimeout)
	if opts.Keychain == nil {
		opts.Keychain = authn.DefaultKeychain
	}
	if opts.Transport == nil {
		opts.Transport = remote.DefaultTransport
	}
	t := &politeTransport{base: opts.Transport, budget: opts.Budget, retries: opts.Retries, maxWait: opts.MaxRetryAfter,
		minWait: opts.MinBackoff, sleep: sleepCtx, requests: map[string]int{}, waited: map[string]int{}}
	// 429 is this package's to wait out (with Retry-After); the
	// library's own retries keep the 5xx answers.
	p, err := remote.NewPuller(remote.WithTransport(t), remote.WithAuthFromKeychain(opts.Keychain), remote.WithPageSize(opts.PageSize),
		remote.WithRetryStatusCodes(http.StatusRequestTimeout, http.StatusInternalServerError, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout))
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return &Client{opts: opts, transport: t, puller: p}, nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Tags lists repository repo (registry.example.org/shop/web), once per
// Client: later calls, concurrent ones too, get the first answer.
func (c *Client) Tags(ctx context.Context, repo string) (Listing, error) {
	return c.listings.do(ctx, repo, func() (Listing, error) { return c.list(ctx, repo) })
}

func (c *Client) list(ctx context.Context, repo string) (Listing, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	r, err := name.NewRepository(repo)
	if err != nil {
		return Listing{}, fmt.Errorf("repository %q: %w", repo, err)
	}
	lister, err := c.puller.Lister(ctx, r)
	if err != nil {
		return Listing{}, fmt.Errorf("list the tags of %s: %w", repo, err)
	}
	var out Listing
	for lister.HasNext() {
		page, err := lister.Next(ctx)
		if err != nil {
			return Listing{}, fmt.Errorf("list the tags of %s: %w", repo, err)
		}
		for _, t := range page.Tags {
			if len(out.Tags) == c.opts.MaxTags {
				out.Capped = true
				return out, nil
			}
			out.Tags = append(out.Tags, t)
		}
		if len(out.Tags) == c.opts.MaxTags && lister.HasNext() {
			out.Capped = true
			return out, nil
		}
	}
	return out, nil
}

// Digest is the digest ref (name:tag) names now, by a HEAD request, once
// per Client.
func (c *Client) Digest(ctx context.Context, ref string) (string, error) {
	return c.digests.do(ctx, ref, func() (string, error) { return c.head(ctx, ref) })
}

func (c *Client) head(ctx context.Context, ref string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("reference %q: %w", ref, err)
	}
	d, err := c.puller.Head(ctx, r)
	if err != nil {
		return "", fmt.Errorf("the digest of %s: %w", ref, err)
	}
	return d.Digest.String(), nil
}

// Requests reports how many requests the run made to each registry host
// and how many 429 answers it waited out.
func (c *Client) Requests() (requests, waited map[string]int) {
	c.transport.mu.Lock()
	defer c.transport.mu.Unlock()
	requests, waited = map[string]int{}, map[string]int{}
	for h, n := range c.transport.requests {
		requests[h] = n
	}
	for h, n := range c.transport.waited {
		waited[h] = n
	}
	return requests, waited
}
