package runtime

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/system"
)

// Engine kinds (Engine.Kind).
const (
	EngineDocker = "docker"
	EnginePodman = "podman"
)

// Engine says which engine hostlet drives and what it does differently
// (docs/engines.md). It is read once, when New connects.
type Engine struct {
	// Kind is EngineDocker or EnginePodman (through its Docker-compatible
	// API).
	Kind string `json:"kind"`
	// Version is the engine's own version; APIVersion the API version
	// hostlet speaks with it (negotiated).
	Version    string `json:"version"`
	APIVersion string `json:"apiVersion"`
	// Builder is the builder builds use by default: "buildkit" or
	// "classic" (Podman: "buildah").
	Builder string `json:"builder"`
	// ImageStore is "containerd" (Docker's containerd image store), or
	// the storage driver (overlay2, overlay, vfs).
	ImageStore string `json:"imageStore"`
	// CgroupDriver is "cgroupfs" or "systemd".
	CgroupDriver string `json:"cgroupDriver"`
	// LogDriver is the engine's default log driver (json-file, journald,
	// k8s-file, ...): log options given without a driver are its.
	LogDriver string `json:"logDriver,omitempty"`
	// Platform is the engine's os/architecture (linux/amd64), as image
	// platforms name them; "" when the engine did not say.
	Platform string `json:"platform,omitempty"`
	// Rootless: the engine runs in a user namespace (its info's security
	// options say name=rootless), so ids on the host are not the
	// containers' ids.
	Rootless bool `json:"rootless,omitempty"`
	// UsernsRemap: the engine puts its containers in a user namespace
	// of its own (dockerd --userns-remap; its info's security options say
	// name=userns), so ids on the host are not the containers' ids
	// either.
	UsernsRemap bool `json:"usernsRemap,omitempty"`
	// noInfo: the engine did not give its info, so whether it is
	// rootless is not known.
	noInfo bool
	// Limits are what this engine cannot do that hostlet would otherwise
	// rely on, said once at start (status, log) instead of waited on.
	Limits []string `json:"limits,omitempty"`
}

// Podman reports whether the engine is Podman.
func (e Engine) Podman() bool { return e.Kind == EnginePodman }

// limitHealthcheckTimers is the limit of a Podman that runs no
// healthcheck timers (they are systemd timers).
const limitHealthcheckTimers = "healthcheck: this Podman runs without systemd (cgroup manager cgroupfs), so its healthcheck timers never fire; hostlet runs each container's healthcheck itself, on its interval, through Podman's API"

// limitHealthcheckUnknown is the limit of a Podman whose info hostlet
// could not read (a socket proxy that refuses /info): whether its
// healthcheck timers fire is unknown, and hostlet runs none itself.
const limitHealthcheckUnknown = "healthcheck: this Podman did not answer /info, so hostlet cannot tell whether it runs healthcheck timers (they need systemd); hostlet does not run them itself, and a container's health may never change from starting"

// hasSecurityOption reports whether an engine's info's security options
// name name ("name=NAME", maybe followed by its settings).
func hasSecurityOption(options []string, name string) bool {
	return slices.ContainsFunc(options, func(o string) bool {
		return o == "name="+name || strings.HasPrefix(o, "name="+name+",")
	})
}

// detectEngine reads which engine answers and how it is set up: its
// version, its info (storage, cgroup driver) and the builder its ping
// named.
func detectEngine(ctx context.Context, cli engineInfoReader, builder build.BuilderVersion) (Engine, error) {
	v, err := cli.ServerVersion(ctx)
	if err != nil {
		return Engine{}, fmt.Errorf("read the engine's version: %w", translate(err))
	}
	// The info only adds details (storage, cgroup driver): an engine
	// slow to give it (Podman computes it) is driven all the same.
	info, err := cli.Info(ctx)
	if err != nil {
		info.CgroupDriver, info.Driver = "unknown", "unknown"
	}
	e := Engine{Kind: EngineDocker, Version: v.Version, APIVersion: cli.ClientVersion(), CgroupDriver: info.CgroupDriver, ImageStore: info.Driver, LogDriver: info.LoggingDriver,
		Platform: enginePlatform(cmp.Or(v.Os, info.OSType), cmp.Or(v.Arch, info.Architecture))}
	e.noInfo = err != nil
	e.Rootless = hasSecurityOption(info.SecurityOptions, "rootless")
	e.UsernsRemap = hasSecurityOption(info.SecurityOptions, "userns")
	if isPodman(v) {
		e.Kind = EnginePodman
		e.Builder = "buildah"
		for _, c := range v.Components {
			if strings.EqualFold(c.Name, "Podman Engine") && c.Version != "" {
				e.Version = c.Version
			}
		}
		switch info.CgroupDriver {
		case "cgroupfs":
			e.Limits = append(e.Limits, limitHealthcheckTimers)
		case "unknown":
			e.Limits = append(e.Limits, limitHealthcheckUnknown)
		}
		return e, nil
	}
	e.Builder = "classic"
	if builder == build.BuilderBuildKit {
		e.Builder = "buildkit"
	}
	if containerdStore(info) {
		e.ImageStore = "containerd"
	}
	return e, nil
}

// engineInfoReader is what detectEngine reads the engine with.
type engineInfoReader interface {
	ServerVersion(ctx context.Context) (types.Version, error)
	Info(ctx context.Context) (system.Info, error)
	ClientVersion() string
}

// isPodman reports whether a version answer is Podman's: its components
// name "Podman Engine" (Docker's name "Engine").
func isPodman(v types.Version) bool {
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(v.Platform.Name), "podman")
}

// containerdStore reports whether Docker keeps its images in containerd
// (Docker 29's default for new installs; "features":
// {"containerd-snapshotter": true} before): its info's DriverStatus
// names the snapshotter ("driver-type": "io.containerd.snapshotter.v1").
func containerdStore(info system.Info) bool {
	for _, kv := range info.DriverStatus {
		if len(kv) == 2 && kv[0] == "driver-type" && strings.HasPrefix(kv[1], "io.containerd.snapshotter") {
			return true
		}
	}
	return false
}

// enginePlatform is the engine's os and architecture as image platforms
// name them, from its version (the daemon's own, in Go's names: a 32-bit
// daemon on a 64-bit kernel is arm), else its info (the kernel's: x86_64
// is amd64, aarch64 arm64). "" when either is unknown.
func enginePlatform(os, arch string) string {
	if os == "" || arch == "" {
		return ""
	}
	switch arch {
	case "x86_64":
		arch = "amd64"
	case "aarch64":
		arch = "arm64"
	case "armv7l", "armv6l":
		arch = "arm"
	case "i386", "i686":
		arch = "386"
	}
	return os + "/" + arch
}
