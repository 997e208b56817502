package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
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
	// upstream carries the calls to the engine.
	upstream *http.Transport

	mu     sync.Mutex
	counts map[string]int
	total  int
	// times are the requests' durations by method and path, streams
	// (events) left out: what the engine took to answer each call.
	times map[string]*callTimes
	// spans are when each timed call began and ended, since the last
	// take.
	spans []callSpan
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
	p := &countingProxy{ln: ln, counts: map[string]int{}, times: map[string]*callTimes{}, seen: make(chan struct{}, 1)}
	p.upstream = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", upstream)
		},
	}
	target := &url.URL{Scheme: "http", Host: "docker"}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
		},
		Transport:     p.upstream,
		FlushInterval: -1,
	}
	p.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key := r.Method + " " + normalizePath(r.URL.Path)
			p.mu.Lock()
			p.counts[key]++
			p.total++
			p.mu.Unlock()
			select {
			case p.seen <- struct{}{}:
			default:
			}
			start := time.Now()
			rp.ServeHTTP(w, r)
			if !strings.HasSuffix(key, "/events") {
				p.took(key, start, time.Now())
			}
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

// callTimes are the durations of one kind of call.
type callTimes struct {
	N     int     `json:"n"`
	Total float64 `json:"totalSeconds"`
	Max   float64 `json:"maxSeconds"`
}

// callSpan is when one call began and ended; change: it was neither a
// GET nor a HEAD.
type callSpan struct {
	start, end time.Time
	change     bool
}

func (p *countingProxy) took(key string, start, end time.Time) {
	d := end.Sub(start)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spans = append(p.spans, callSpan{start: start, end: end, change: !strings.HasPrefix(key, "GET ") && !strings.HasPrefix(key, "HEAD ")})
	t := p.times[key]
	if t == nil {
		t = &callTimes{}
		p.times[key] = t
	}
	t.N++
	t.Total += d.Seconds()
	t.Max = max(t.Max, d.Seconds())
}

// takeTimes returns the call durations since the last take and when each
// call began and ended, and forgets them.
func (p *countingProxy) takeTimes() (map[string]callTimes, []callSpan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]callTimes, len(p.times))
	for k, t := range p.times {
		out[k] = *t
	}
	clear(p.times)
	spans := p.spans
	p.spans = nil
	return out, spans
}

// stepTimeline is where a timed step's engine calls fall in it, in
// seconds from its start: what hostlet does before its first call (the
// webhook, the fetch, the parse, the plan), while no call is in flight
// between its calls, and after its last call ends until every pod
// answers.
type stepTimeline struct {
	Seconds float64 `json:"seconds"`
	Calls   int     `json:"calls"`
	// FirstCall is when the first call began, FirstChange the first
	// that is neither a GET nor a HEAD (a create, a stop); LastEnd when
	// the last one ended.
	FirstCall   float64 `json:"firstCall"`
	FirstChange float64 `json:"firstChange"`
	LastEnd     float64 `json:"lastEnd"`
	// Busy is the time at least one call was in flight.
	Busy float64 `json:"busy"`
}

// timeline places the spans that began within the step [start, start+secs).
func timeline(spans []callSpan, start time.Time, secs float64) stepTimeline {
	end := start.Add(time.Duration(secs * float64(time.Second)))
	in := slices.DeleteFunc(slices.Clone(spans), func(s callSpan) bool { return s.start.Before(start) || !s.start.Before(end) })
	tl := stepTimeline{Seconds: secs, Calls: len(in)}
	if len(in) == 0 {
		return tl
	}
	slices.SortFunc(in, func(a, b callSpan) int { return a.start.Compare(b.start) })
	tl.FirstCall = in[0].start.Sub(start).Seconds()
	if i := slices.IndexFunc(in, func(s callSpan) bool { return s.change }); i >= 0 {
		tl.FirstChange = in[i].start.Sub(start).Seconds()
	}
	var busy time.Duration
	cur := in[0]
	last := in[0].end
	for _, s := range in[1:] {
		if s.end.After(last) {
			last = s.end
		}
		if s.start.After(cur.end) {
			busy += cur.end.Sub(cur.start)
			cur = s
			continue
		}
		if s.end.After(cur.end) {
			cur.end = s.end
		}
	}
	busy += cur.end.Sub(cur.start)
	tl.LastEnd, tl.Busy = last.Sub(start).Seconds(), busy.Seconds()
	return tl
}

// callTable renders call durations, the longest in all first.
func callTable(times map[string]callTimes) string {
	keys := slices.SortedFunc(maps.Keys(times), func(a, b string) int {
		return cmp.Or(cmp.Compare(times[b].Total, times[a].Total), cmp.Compare(a, b))
	})
	var b strings.Builder
	b.WriteString("| call | calls | seconds in all | mean ms | max ms |\n|---|---:|---:|---:|---:|\n")
	for _, k := range keys {
		t := times[k]
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.1f | %.1f |\n", k, t.N, t.Total, 1000*t.Total/float64(t.N), 1000*t.Max)
	}
	return b.String()
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
	// Its connections to the engine, kept idle for reuse, would stay
	// open for the rest of the run (one proxy a profiled block).
	p.upstream.CloseIdleConnections()
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
