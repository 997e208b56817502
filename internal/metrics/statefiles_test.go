package metrics_test

import (
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/metrics"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// TestStateFileErrors: every failure to read or write a state file counts
// in hostlet_state_file_errors_total{file}, and a write that succeeds later
// does not take the count back.
func TestStateFileErrors(t *testing.T) {
	var problems atomicfile.Problems
	m := metrics.New("v", "c", func() hsync.Report { return hsync.Report{} }, func() []sources.Status { return nil })
	m.StateFiles(&problems)
	if mf := scrape(t, m.Handler())["hostlet_state_file_errors_total"]; mf != nil {
		t.Errorf("errors counted before any: %v", mf)
	}
	now := time.Now()
	problems.Report(atomicfile.Problem{File: "sources/push.json", Op: atomicfile.OpRead, Error: "truncated", Since: now})
	problems.Report(atomicfile.Problem{File: "restarts.json", Op: atomicfile.OpWrite, Error: "no space", Since: now})
	problems.Report(atomicfile.Problem{File: "restarts.json", Op: atomicfile.OpWrite, Error: "no space", Since: now})
	problems.Resolve("restarts.json")
	mf := scrape(t, m.Handler())["hostlet_state_file_errors_total"]
	if mf == nil {
		t.Fatal("no hostlet_state_file_errors_total")
	}
	got := map[string]float64{}
	for _, s := range mf.GetMetric() {
		got[s.GetLabel()[0].GetValue()] = s.GetCounter().GetValue()
	}
	if len(got) != 2 || got["sources/push.json"] != 1 || got["restarts.json"] != 2 {
		t.Errorf("counts %v, want sources/push.json 1, restarts.json 2", got)
	}
}
