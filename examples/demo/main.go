// Command demo is a small HTTP server for the quickstart and for hostlet's
// integration tests. It uses only the standard library and builds as a
// static binary (CGO_ENABLED=0), so it runs in an image holding nothing else.
//
// Usage:
//
//	demo [-listen ADDR]   serve HTTP (default $LISTEN, else ":8080")
//	demo pause            block until SIGTERM or SIGINT, then exit 0 (an infra container);
//	                      /tmp/paused exists once it handles them
//	demo exists PATH      exit 0 if PATH exists, else 1
//	demo probe-ok         exit 0 (an exec probe that passes)
//	demo probe-fail       exit 1 (an exec probe that fails)
//	demo write PATH TEXT  write TEXT to file PATH and exit 0 (an init container)
//
// Endpoints:
//
//	GET  /              "hello from <hostname>, MESSAGE=<$MESSAGE>"
//	GET  /healthz       200, or 500 once /tmp/unhealthy exists
//	POST /unhealthy     create /tmp/unhealthy
//	GET  /env?name=X    the value of environment variable X (tests only)
//	GET  /read?path=P   the contents of file P
//	POST /write?path=P  write the request body to file P
//	GET  /fetch?url=U   GET U and return its body (containers of a pod reach each other on localhost)
//	POST /exit?code=N   respond, then exit with code N
//	POST /alloc?mb=N    allocate and touch N MiB and keep it
//
// With EXIT_AFTER set to a Go duration, the server exits with code
// $EXIT_CODE (default 1) after that long (for crash-loop tests). With
// GRPC_LISTEN set (":9090"), it also answers the gRPC health protocol
// there (SERVING; NOT_SERVING once /tmp/unhealthy exists; the service
// "unknown" is NOT_FOUND).
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "pause":
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			_ = os.WriteFile("/tmp/paused", nil, 0o644) // where it can: a sign for tests
			<-ctx.Done()
			stop()
			os.Exit(0)
		case "probe-ok":
			os.Exit(0)
		case "exists":
			if len(os.Args) != 3 {
				os.Exit(2)
			}
			if _, err := os.Stat(os.Args[2]); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		case "probe-fail":
			os.Exit(1)
		case "write":
			if len(os.Args) != 4 {
				fmt.Fprintln(os.Stderr, "usage: demo write PATH TEXT")
				os.Exit(2)
			}
			if err := os.WriteFile(os.Args[2], []byte(os.Args[3]), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}

	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	listen := fs.String("listen", cmp.Or(os.Getenv("LISTEN"), ":8080"), "address to listen on")
	_ = fs.Parse(os.Args[1:]) // ExitOnError
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	if err := run(*listen, log); err != nil {
		log.Error("demo server failed", "error", err)
		os.Exit(1)
	}
}

func run(listen string, log *slog.Logger) error {
	if after := os.Getenv("EXIT_AFTER"); after != "" {
		d, err := time.ParseDuration(after)
		if err != nil {
			return fmt.Errorf("parse EXIT_AFTER %q: %w", after, err)
		}
		code := 1
		if c := os.Getenv("EXIT_CODE"); c != "" {
			if code, err = strconv.Atoi(c); err != nil {
				return fmt.Errorf("parse EXIT_CODE %q: %w", c, err)
			}
		}
		time.AfterFunc(d, func() {
			log.Info("EXIT_AFTER elapsed; exiting", "code", code)
			os.Exit(code)
		})
	}

	s := newServer(log)
	srv := &http.Server{
		Addr:              listen,
		Handler:           s.routes(),
		ReadHeaderTimeout: 10 * time.Second,
	}
	if addr := os.Getenv("GRPC_LISTEN"); addr != "" {
		g := grpcHealthServer(addr, s)
		go func() { log.Info("gRPC health", "addr", addr, "error", g.ListenAndServe()) }()
		defer g.Close()
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("listening", "addr", listen)
	select {
	case err := <-errc:
		return fmt.Errorf("serve on %s: %w", listen, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve on %s: %w", listen, err)
	}
	return nil
}

type server struct {
	log *slog.Logger
	// unhealthyFile makes /healthz fail once it exists.
	unhealthyFile string

	mu    sync.Mutex
	alloc [][]byte // memory held for /alloc
}

func newServer(log *slog.Logger) *server {
	return &server{log: log, unhealthyFile: "/tmp/unhealthy"}
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.hello)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("POST /unhealthy", s.unhealthy)
	mux.HandleFunc("GET /env", s.env)
	mux.HandleFunc("GET /read", s.read)
	mux.HandleFunc("POST /write", s.write)
	mux.HandleFunc("GET /fetch", s.fetch)
	mux.HandleFunc("POST /exit", s.exit)
	mux.HandleFunc("POST /alloc", s.allocate)
	return mux
}

func (s *server) hello(w http.ResponseWriter, _ *http.Request) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	fmt.Fprintf(w, "hello from %s, MESSAGE=%s\n", host, os.Getenv("MESSAGE"))
}

func (s *server) healthz(w http.ResponseWriter, _ *http.Request) {
	if _, err := os.Stat(s.unhealthyFile); err == nil {
		http.Error(w, "unhealthy", http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "ok")
}

func (s *server) unhealthy(w http.ResponseWriter, _ *http.Request) {
	if err := os.WriteFile(s.unhealthyFile, nil, 0o644); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintln(w, "now unhealthy")
}

func (s *server) env(w http.ResponseWriter, r *http.Request) {
	v, ok := os.LookupEnv(r.URL.Query().Get("name"))
	if !ok {
		http.Error(w, "not set", http.StatusNotFound)
		return
	}
	fmt.Fprint(w, v)
}

func (s *server) read(w http.ResponseWriter, r *http.Request) {
	data, err := os.ReadFile(r.URL.Query().Get("path"))
	switch {
	case errors.Is(err, os.ErrNotExist):
		http.Error(w, err.Error(), http.StatusNotFound)
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	default:
		_, _ = w.Write(data)
	}
}

func (s *server) write(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := os.WriteFile(r.URL.Query().Get("path"), data, 0o644); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "wrote %d bytes\n", len(data))
}

func (s *server) fetch(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL.Query().Get("url"), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

func (s *server) exit(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.URL.Query().Get("code"))
	if err != nil {
		http.Error(w, "code: "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Connection", "close")
	fmt.Fprintf(w, "exiting with code %d\n", code)
	_ = http.NewResponseController(w).Flush()
	s.log.Info("exit requested", "code", code)
	// Give the response a moment to leave before the process goes.
	time.AfterFunc(100*time.Millisecond, func() { os.Exit(code) })
}

func (s *server) allocate(w http.ResponseWriter, r *http.Request) {
	mb, err := strconv.Atoi(r.URL.Query().Get("mb"))
	if err != nil || mb < 0 {
		http.Error(w, "mb: want a non-negative integer", http.StatusBadRequest)
		return
	}
	buf := make([]byte, mb<<20)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1 // touch every page so it is really resident
	}
	s.mu.Lock()
	s.alloc = append(s.alloc, buf)
	total := 0
	for _, b := range s.alloc {
		total += len(b)
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "holding %d MiB\n", total>>20)
}
