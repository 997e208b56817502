package api

import (
	"bufio"
	"context"
	"net/http"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// StatsReader reads one container's usage: the engine's stats API by
// default, a cAdvisor with stats.cadvisor.
type StatsReader interface {
	Stats(ctx context.Context, id string) (hruntime.Stats, error)
}

// MachineReader reads the host's size and free memory (a cAdvisor, with
// stats.cadvisor).
type MachineReader interface {
	Machine(ctx context.Context) (hruntime.Machine, error)
}

// MachineStats is the host's usage, as GET /stats shows it.
type MachineStats struct {
	hruntime.Machine
	// LoadAverage is always /proc/loadavg: cAdvisor has no 1, 5 and 15
	// minute load averages.
	LoadAverage [3]float64 `json:"loadAverage"`
	Pods        int        `json:"pods"`
	Containers  int        `json:"containers"`
}

// ContainerStatsDoc is GET /stats/{pod}/{container}.
type ContainerStatsDoc struct {
	Pod         string `json:"pod"`
	Container   string `json:"container"`
	ContainerID string `json:"containerID"`
	hruntime.Stats
}

// HandleStats serves /stats (the machine: from machine, or from /proc when
// machine is nil) and /stats/{pod}/{container} (one container, from
// containers). Each is read once per request, never in the sync loop; a
// reader's failure is a 502 naming it.
func (s *Server) HandleStats(containers StatsReader, machine MachineReader) {
	s.HandleRead("GET /stats", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var ms MachineStats
		if machine == nil {
			ms.Machine = s.procMachine()
		} else {
			m, err := machine.Machine(req.Context())
			if err != nil {
				writeError(w, http.StatusBadGateway, err.Error())
				return
			}
			ms.Machine = m
		}
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
		st, err := containers.Stats(req.Context(), id)
		if err != nil {
			writeError(w, http.StatusBadGateway, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, ContainerStatsDoc{Pod: pod, Container: name, ContainerID: id, Stats: st})
	}))
}

// procMachine reads the host's figures from /proc.
func (s *Server) procMachine() hruntime.Machine {
	m := hruntime.Machine{Time: s.opts.Clock.Now().UTC(), Cores: goruntime.NumCPU()}
	m.MemoryBytes, m.MemoryAvailableBytes = ReadMeminfo()
	return m
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
