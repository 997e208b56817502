//go:build !pprof

package main

import (
	"context"
	"log/slog"
	"os"
)

// pprofBuilt: this binary cannot serve net/http/pprof.
const pprofBuilt = false

// startPprof, in a binary built without the pprof tag, only says that
// HOSTLET_PPROF cannot be served: net/http/pprof (and the templates it
// brings) is left out of the default build to keep the binary's pages
// down (docs/performance.md, "Memory").
func startPprof(_ context.Context, log *slog.Logger) {
	if addr := os.Getenv(pprofEnv); addr != "" {
		log.Warn("HOSTLET_PPROF is set, but this binary was built without pprof; build with `make build TAGS=grpcnotrace,nethttpomithttp2,pprof`", "addr", addr)
	}
}
