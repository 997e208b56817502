package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
)

// countingProxy sits on a unix socket in front of the Docker socket and
// counts the requests passing through by method and path (API version
// prefix dropped, IDs replaced by {id}). Streams (events) are passed on as
// they come.
type countingProxy struct {
	ln  net.Listener
	srv *http.Server

	mu     sync.Mutex
	counts map[string]int
	total  int
	// seen is signalled (without blocking) on every request.
	seen chan struct{}
}

var (
	versionPrefix = regexp.MustCompile(`^/v[0-9]+\.[0-9]+/`)
	hexID         = regexp.MustCompile(`/[0-9a-f]{64}(/|$)`)
)

// normalizePath turns /v1.41/containers/<64 hex>/json into
// /containers/{id}/json.
func normalizePath(p string) string {
	p = versionPrefix.ReplaceAllString(p, "/")
	return hexID.ReplaceAllString(p, "/{id}$1")
}

func startCountingProxy(sock, upstream string) (*countingProxy, error) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	p := &countingProxy{ln: ln, counts: map[string]int{}, seen: make(chan struct{}, 1)}
	target := &url.URL{Scheme: "http", Host: "docker"}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", upstream)
			},
		},
		FlushInterval: -1,
	}
	p.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			p.counts[r.Method+" "+normalizePath(r.URL.Path)]++
			p.total++
			p.mu.Unlock()
			select {
			case p.seen <- struct{}{}:
			default:
			}
			rp.ServeHTTP(w, r)
		}),
	}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// snapshot returns a copy of the counts and the total.
func (p *countingProxy) snapshot() (map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]int, len(p.counts))
	for k, v := range p.counts {
		m[k] = v
	}
	return m, p.total
}

// waitRequest waits for the next request through the proxy (drained first).
func (p *countingProxy) waitRequest(ctx context.Context) error {
	select {
	case <-p.seen:
	default:
	}
	select {
	case <-p.seen:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *countingProxy) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	_ = p.srv.Close()
}

// diffCounts returns b - a per key, dropping zeros.
func diffCounts(a, b map[string]int) map[string]int {
	d := map[string]int{}
	for k, v := range b {
		if n := v - a[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// dockerSocket is the engine socket the proxy forwards to: $DOCKER_HOST
// when it names a unix socket, else /var/run/docker.sock.
func dockerSocket(host string) string {
	if s, ok := strings.CutPrefix(host, "unix://"); ok {
		return s
	}
	return "/var/run/docker.sock"
}
