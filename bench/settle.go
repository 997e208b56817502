package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTimes are the machine's CPU times (all CPUs) as /proc/stat counts
// them, in clock ticks: in all, and idle (idle and iowait).
type cpuTimes struct{ total, idle uint64 }

// parseCPUTimes reads the first ("cpu") line of /proc/stat's content.
func parseCPUTimes(stat string) (cpuTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return cpuTimes{}, errors.New("no cpu line in /proc/stat")
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("/proc/stat cpu field %d: %w", i+1, err)
		}
		t.total += v
		if i == 3 || i == 4 { // idle, iowait
			t.idle += v
		}
	}
	return t, nil
}

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseCPUTimes(string(b))
}

// idleShare is the share of CPU time idle between a and b (1 when no time
// passed).
func idleShare(a, b cpuTimes) float64 {
	if b.total <= a.total {
		return 1
	}
	return float64(b.idle-a.idle) / float64(b.total-a.total)
}

// settle waits until the machine's CPUs were at least minIdle idle over
// two consecutive seconds, or max passed, and returns how long it waited.
// The engine goes on working after a timed step returns (containerd
// collects the snapshots of removed containers in the background); a
// block started before that ends is timed against the last one's work.
func settle(ctx context.Context, minIdle float64, max time.Duration) (time.Duration, error) {
	start := time.Now()
	prev, err := readCPUTimes()
	if err != nil {
		return 0, err
	}
	quiet := 0
	for quiet < 2 && time.Since(start) < max {
		if err := sleepCtx(ctx, time.Second); err != nil {
			return time.Since(start), err
		}
		now, err := readCPUTimes()
		if err != nil {
			return time.Since(start), err
		}
		if idleShare(prev, now) >= minIdle {
			quiet++
		} else {
			quiet = 0
		}
		prev = now
	}
	return time.Since(start), nil
}
