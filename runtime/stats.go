package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
)

// Stats is a container's resource usage at one moment.
type Stats struct {
	Time time.Time `json:"time"`
	// MemoryUsageBytes is the cgroup's usage, page cache included.
	MemoryUsageBytes uint64 `json:"memoryUsageBytes"`
	// MemoryWorkingSetBytes is usage less inactive page cache: what the
	// kernel cannot reclaim, what an OOM kill is decided on.
	MemoryWorkingSetBytes uint64 `json:"memoryWorkingSetBytes"`
	MemoryLimitBytes      uint64 `json:"memoryLimitBytes"`
	// CPUUsageSeconds is the CPU time the container used since it started.
	CPUUsageSeconds float64 `json:"cpuUsageSeconds"`
	Pids            uint64  `json:"pids"`
}

// Machine is the host's size and free memory at one moment, as GET /stats
// shows them: read from /proc by default, or from a cAdvisor
// (stats.cadvisor).
type Machine struct {
	Time        time.Time `json:"time"`
	Cores       int       `json:"cores"`
	MemoryBytes uint64    `json:"memoryBytes"`
	// MemoryAvailableBytes is what can still be allocated without
	// swapping: MemAvailable from /proc, or the capacity less the root
	// cgroup's working set from a cAdvisor (the kubelet's
	// memory.available).
	MemoryAvailableBytes uint64 `json:"memoryAvailableBytes"`
}

// Stats reads a container's usage once (one engine call, no streaming).
func (d *Docker) Stats(ctx context.Context, id string) (Stats, error) {
	r, err := d.cli.ContainerStatsOneShot(ctx, id)
	if err != nil {
		return Stats{}, fmt.Errorf("stats of container %s: %w", id, translate(err))
	}
	defer r.Body.Close()
	var s container.StatsResponse
	if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
		return Stats{}, fmt.Errorf("stats of container %s: decode: %w", id, err)
	}
	out := Stats{
		Time:             s.Read,
		MemoryUsageBytes: s.MemoryStats.Usage,
		MemoryLimitBytes: s.MemoryStats.Limit,
		CPUUsageSeconds:  float64(s.CPUStats.CPUUsage.TotalUsage) / 1e9,
		Pids:             s.PidsStats.Current,
	}
	// cgroup v1 reports total_inactive_file, v2 inactive_file.
	inactive := s.MemoryStats.Stats["total_inactive_file"]
	if v, ok := s.MemoryStats.Stats["inactive_file"]; ok && inactive == 0 {
		inactive = v
	}
	out.MemoryWorkingSetBytes = out.MemoryUsageBytes
	if inactive < out.MemoryUsageBytes {
		out.MemoryWorkingSetBytes = out.MemoryUsageBytes - inactive
	}
	return out, nil
}
