package main

import (
	"log/slog"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"

	"github.com/hostlet/hostlet/internal/exepages"
)

// agentGCPercent is the GOGC of `hostlet run` unless GOGC is set. The
// agent's live heap is a few MiB (docs/performance.md), so the default of
// 100 lets the heap and the memory the collector keeps grow by as much
// again; 50 keeps idle RSS about 2 MiB lower for no CPU cost that shows
// in the idle or converge figures.
const agentGCPercent = 50

// tuneMemory sets the memory defaults of a long-running agent: GOGC as
// above, and no heap profile sampling (its buckets live as long as the
// process) unless this binary serves pprof on HOSTLET_PPROF or
// GODEBUG=memprofilerate sets the rate.
func tuneMemory() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(agentGCPercent)
	}
	servesPprof := pprofBuilt && os.Getenv(pprofEnv) != ""
	if !servesPprof && !strings.Contains(os.Getenv("GODEBUG"), "memprofilerate=") {
		goruntime.MemProfileRate = 0
	}
}

// releaseStartPages gives back the mapping of the pages of the binary
// that the ~300 packages' init functions and the config's loading touched
// once, and drops the unmapped ones from the page cache
// (internal/exepages): with 50 pods, 4–6 MiB less RSS whether the binary
// was read from disk or just written (docs/performance.md). A failure
// costs only those MiB.
func releaseStartPages(log *slog.Logger) {
	advised, err := exepages.Release()
	if err != nil {
		log.Debug("the binary's start-up pages are not all given back", "released_bytes", advised, "error", err)
		return
	}
	log.Debug("released the mapping of the binary's start-up pages", "bytes", advised)
}
