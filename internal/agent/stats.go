package agent

import (
	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/cadvisor"
	"github.com/hostlet/hostlet/internal/config"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// statsReaders are where GET /stats reads its figures: the engine's stats
// API for containers and /proc for the machine (a nil MachineReader), or
// the cAdvisor of stats.cadvisor for both.
func statsReaders(rt *hruntime.Docker, cfg config.Stats) (api.StatsReader, api.MachineReader) {
	if cfg.CAdvisor == "" {
		return rt, nil
	}
	c := cadvisor.New(cfg.CAdvisor)
	if cadvisor.ByCgroup(rt.Engine()) {
		c.WithCgroupPaths(rt.CgroupPath)
	}
	return c, c
}
