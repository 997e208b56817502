package api

import (
	"bufio"
	"context"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// StatsReader reads one container's usage from the engine.
type StatsReader interface {
	Stats(ctx context.Context, id string) (hruntime.Stats, error)
}

// MachineStats is the host's usage, as GET /stats shows it.
type MachineStats struct {
	Time                 time.Time  `json:"time"`
	Cores                int        `json:"cores"`
	MemoryBytes          uint64     `json:"memoryBytes"`
	MemoryAvailableBytes uint64     `json:"memoryAvailableBytes"`
	LoadAverage          [3]float64 `json:"loadAverage"`
	Pods                 int        `json:"pods"`
	Containers           int        `json:"containers"`
}

// ContainerStatsDoc is GET /stats/{pod}/{container}.
type ContainerStatsDoc struct {
	Pod         string `json:"pod"`
	Container   string `json:"container"`
	ContainerID string `json:"containerID"`
	hruntime.Stats
}

// HandleStats serves /stats (the machine) and /stats/{pod}/{container}
// (one container, from the engine's stats API; one call per request, none
// in the sync loop).
func (s *Server) HandleStats(r StatsReader) {
	s.HandleRead("GET /stats", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ms := MachineStats{Time: s.opts.Now().UTC(), Cores: goruntime.NumCPU()}
		ms.MemoryBytes, ms.MemoryAvailableBytes = ReadMeminfo()
		ms.LoadAverage = readLoadavg()
		for _, p := range s.syncer.Report().Pods {
			ms.Pods++
			ms.Containers += len(p.Containers)
		}
		writeJSON(w, http.StatusOK, ms)
	}))
	s.HandleRead("GET /stats/{pod}/{container}", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		pod, name := req.PathValue("pod"), req.PathValue("container")
		id := ""
		for _, p := range s.syncer.Report().Pods {
			if p.ID != pod {
				continue
			}
			for _, c := range p.Containers {
				if c.Name == name {
					id = c.ContainerID
				}
			}
		}
		if id == "" {
			writeError(w, http.StatusNotFound, "no container "+name+" in pod "+pod)
			return
		}
		st, err := r.Stats(req.Context(), id)
		if err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, ContainerStatsDoc{Pod: pod, Container: name, ContainerID: id, Stats: st})
	}))
}

// ReadMeminfo returns MemTotal and MemAvailable from /proc/meminfo, in bytes.
func ReadMeminfo() (total, available uint64) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		kb, _ := strconv.ParseUint(fields[0], 10, 64)
		switch key {
		case "MemTotal":
			total = kb * 1024
		case "MemAvailable":
			available = kb * 1024
		}
	}
	return total, available
}

func readLoadavg() [3]float64 {
	var out [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return out
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		out[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return out
}
