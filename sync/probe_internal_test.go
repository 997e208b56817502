package sync

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// countingServer is an httptest server that counts the requests it gets
// and answers each with handler.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func splitHostPort(t *testing.T, srv *httptest.Server) (string, string) {
	t.Helper()
	host, port, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

func httpTarget(ip, host, port, path string) probeTarget {
	return probeTarget{pod: "web", slot: "app", id: "c1", ip: ip,
		probe: manifest.Probe{Type: manifest.ProbeHTTP, HTTPGet: &manifest.HTTPGet{Host: host, Port: port, Path: path}}}
}

// TestHTTPProbeStaysInThePod is finding 9 of issue 12: a probe whose target
// answers 302 to another server on loopback never reaches that server, a
// probe with another host is refused without a connection, and redirects on
// the pod's own address are followed.
func TestHTTPProbeStaysInThePod(t *testing.T) {
	// The service on the host's loopback that a probe must not reach.
	other, otherHits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	})
	otherHost, otherPort := splitHostPort(t, other)
	// The pod: /away redirects to the other server, /here to /healthz of
	// the pod itself, /sick answers 500.
	pod, podHits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/secret", http.StatusFound)
		case "/here":
			http.Redirect(w, r, "/sick", http.StatusFound)
		case "/sick":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusOK)
		}
	})
	podIP, podPort := splitHostPort(t, pod)

	tests := []struct {
		name      string
		target    probeTarget
		wantErr   string // "" for healthy
		podHits   int64
		otherHits int64
	}{
		{name: "healthy", target: httpTarget(podIP, "", podPort, "/healthz"), podHits: 1},
		{name: "the pod's own IP as host", target: httpTarget(podIP, podIP, podPort, "/healthz"), podHits: 1},
		{name: "redirect off the pod is not followed", target: httpTarget(podIP, "", podPort, "/away"), podHits: 1},
		{name: "redirect on the pod is followed", target: httpTarget(podIP, "", podPort, "/here"), podHits: 2,
			wantErr: "status 500"},
		{name: "another host is refused", target: httpTarget("192.0.2.10", otherHost, otherPort, "/"),
			wantErr: `probe host "` + otherHost + `" is not the pod's address 192.0.2.10`},
		{name: "a name is refused", target: httpTarget(podIP, "localhost", podPort, "/healthz"),
			wantErr: `probe host "localhost" is not the pod's address ` + podIP},
	}
	p := newProber(nil, slog.New(slog.DiscardHandler), nil, clock.Real{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod0, other0 := podHits.Load(), otherHits.Load()
			err := p.check(context.Background(), tt.target, 5*time.Second)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("check: %v, want healthy", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("check: %v, want an error with %q", err, tt.wantErr)
			}
			if got := podHits.Load() - pod0; got != tt.podHits {
				t.Errorf("the pod got %d requests, want %d", got, tt.podHits)
			}
			if got := otherHits.Load() - other0; got != tt.otherHits {
				t.Errorf("the server off the pod got %d requests, want %d", got, tt.otherHits)
			}
		})
	}
}

// TestHTTPProbeRedirectLoop: redirects on the pod stop after ten.
func TestHTTPProbeRedirectLoop(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop"+strconv.FormatInt(n.Add(1), 10), http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	ip, port := splitHostPort(t, srv)
	p := newProber(nil, slog.New(slog.DiscardHandler), nil, clock.Real{})
	err := p.check(context.Background(), httpTarget(ip, "", port, "/"), 5*time.Second)
	if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("check: %v, want stopped after 10 redirects", err)
	}
	if got := n.Load(); got != 10 {
		t.Errorf("the pod got %d requests, want 10", got)
	}
}

// countingExec is an Execer whose command always succeeds, counting the
// calls; it runs on the worker's goroutine, so the count is exact whenever
// the worker waits.
type countingExec struct{ n atomic.Int64 }

func (e *countingExec) Exec(context.Context, string, []string) (int, error) {
	e.n.Add(1)
	return 0, nil
}

// TestProbePeriodPastTheLimitDoesNotSpin: a probe whose seconds would wrap
// a time.Duration (validation refuses them; this is the prober's own guard
// for a value that never went through it) checks once and then waits, on
// the clock, instead of checking its container in a tight loop.
func TestProbePeriodPastTheLimitDoesNotSpin(t *testing.T) {
	tests := []struct {
		name            string
		initial, period int64
		advance         time.Duration
		first, after    int64 // checks when the worker first waits, and after advance
	}{
		// 9223372037 s is past the int64 nanoseconds of a time.Duration:
		// unguarded it wraps to about -8.4e18 ns, a wait that returns at once.
		{name: "period wraps", period: 9223372037, advance: 24 * time.Hour, first: 1, after: 1},
		{name: "negative period waits a second", period: -1, advance: time.Second, first: 1, after: 2},
		{name: "initial delay wraps", initial: 9223372037, period: 10, advance: 24 * time.Hour, first: 0, after: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			exec := &countingExec{}
			clk := clock.NewFake(time.Unix(0, 0))
			p := newProber(exec, slog.New(slog.DiscardHandler), func(context.Context, string, string, string, string, string, time.Duration) {
				t.Error("container reported unhealthy")
			}, clk)
			ctx, cancel := context.WithCancel(t.Context())
			w := &probeWorker{cancel: cancel, done: make(chan struct{}), healthy: true}
			target := probeTarget{pod: "web", slot: "app", id: "c1", probe: manifest.Probe{
				Type: manifest.ProbeExec, Exec: &manifest.Exec{Command: []string{"true"}},
				InitialDelaySeconds: tc.initial, PeriodSeconds: tc.period, TimeoutSeconds: 1, FailureThreshold: 3}}
			go p.run(ctx, w, target)
			t.Cleanup(func() { cancel(); <-w.done })

			wait := func() {
				t.Helper()
				wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer wcancel()
				if err := clk.WaitForTimers(wctx, 1); err != nil {
					t.Fatalf("the worker never waited on the clock (%d checks): %v", exec.n.Load(), err)
				}
			}
			wait()
			if got := exec.n.Load(); got != tc.first {
				t.Errorf("%d checks before the first wait, want %d", got, tc.first)
			}
			clk.Advance(tc.advance)
			wait()
			if got := exec.n.Load(); got != tc.after {
				t.Errorf("%d checks after %v, want %d", got, tc.advance, tc.after)
			}
		})
	}
}

// TestProbeOfHostNetworkPodReachesTheHost (outside review of the
// host-access settings): a container on the host's network has no address
// of its own: Docker lists it on the "host" network with an empty
// IPAddress, so the prober's target has ip "" and every tcpSocket/httpGet
// check fails ("the pod has no IP address to probe"), although the service
// answers on the host. The container is restarted every failureThreshold
// periods, forever; validation accepts the pod.
func TestProbeOfHostNetworkPodReachesTheHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	m := manifest.Manifest{Version: manifest.Version, ID: "web", HostNetwork: true, Containers: []manifest.Container{{
		Name: "app", Image: "example.org/app:1",
		Ports: []manifest.Port{{ContainerPort: port}},
		LivenessProbe: &manifest.Probe{Type: manifest.ProbeTCP, TCPSocket: &manifest.TCPSocket{Port: strconv.Itoa(port)},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1},
	}}}
	pod := NewPod(m, "test", "rev1")
	running := hruntime.Container{ID: "c1", State: hruntime.StateRunning, IP: "", Labels: map[string]string{
		hruntime.LabelPod: "web", hruntime.LabelContainer: "app", hruntime.LabelHash: manifest.ContainerHash(pod.Manifest, 0)}}

	restarted := make(chan string, 1)
	p := newProber(nil, slog.New(slog.DiscardHandler), func(_ context.Context, _, _, _, _, why string, _ time.Duration) {
		select {
		case restarted <- why:
		default:
		}
	}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); p.stopAll() }()
	p.update(ctx, []Pod{pod}, []hruntime.Container{running}, nil)
	select {
	case why := <-restarted:
		t.Errorf("the hostNetwork pod's container is restarted by its liveness probe although it listens on the host (127.0.0.1:%d): %s", port, why)
	case <-time.After(1500 * time.Millisecond):
	}
}
