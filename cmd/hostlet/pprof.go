//go:build pprof

package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// pprofBuilt: this binary can serve net/http/pprof.
const pprofBuilt = true

// startPprof serves net/http/pprof on $HOSTLET_PPROF until ctx ends.
func startPprof(ctx context.Context, _ *slog.Logger) {
	addr := os.Getenv(pprofEnv)
	if addr == "" {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
			fmt.Fprintf(os.Stderr, "hostlet: %s=%s: %v\n", pprofEnv, addr, err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
}
