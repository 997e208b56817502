package api

import (
	"time"

	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// Document is the status document: what a host runs, where it came from,
// and what went wrong. Env values never appear in it.
type Document struct {
	Hostname string               `json:"hostname"`
	Version  string               `json:"version"`
	Time     time.Time            `json:"time"`
	LastSync hsync.SyncInfo       `json:"lastSync"`
	Sources  []sources.Status     `json:"sources"`
	Pods     []hsync.PodStatus    `json:"pods"`
	Rejected []validate.Rejection `json:"rejected"`
	Machine  Machine              `json:"machine"`
}

// Machine describes the host.
type Machine struct {
	Cores       int    `json:"cores"`
	MemoryBytes uint64 `json:"memoryBytes"`
}
