package api

import (
	"time"

	"github.com/hostlet/hostlet/internal/atomicfile"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// Document is the status document: what a host runs, where it came from,
// and what went wrong. Env values never appear in it.
type Document struct {
	Hostname string `json:"hostname"`
	// Labels are the host's labels (fleet selectors match them).
	Labels   map[string]string `json:"labels,omitempty"`
	Version  string            `json:"version"`
	Time     time.Time         `json:"time"`
	LastSync hsync.SyncInfo    `json:"lastSync"`
	// Window is the maintenance window (sync.windows): open, when the
	// next opens, and a force now on; absent without windows.
	Window   *hsync.Window        `json:"window,omitempty"`
	Sources  []sources.Status     `json:"sources"`
	Pods     []hsync.PodStatus    `json:"pods"`
	Rejected []validate.Rejection `json:"rejected"`
	Machine  Machine              `json:"machine"`
	// Engine is the engine hostlet drives: kind, version, builder, image
	// store, and what it cannot do (limits), read once at start.
	Engine *hruntime.Engine `json:"engine,omitempty"`
	// StateErrors lists the state files under stateDir that could not be
	// read (damaged, unreadable: set aside, since hostlet started) or
	// written (the last time); [] when none.
	StateErrors []atomicfile.Problem `json:"stateErrors"`
}

// Machine describes the host.
type Machine struct {
	Cores       int    `json:"cores"`
	MemoryBytes uint64 `json:"memoryBytes"`
}
