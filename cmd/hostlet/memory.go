package main

import (
	"os"
	goruntime "runtime"
	"runtime/debug"
	"strings"
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
