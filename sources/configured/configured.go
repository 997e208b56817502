// Package configured makes the sources of a host config: one constructor
// for every source type, git included. It is the one place that chooses an
// implementation by the source's type; everything else uses the
// sources.Source it returns (Read once for `hostlet validate` and `hostlet
// diff`, Run for `hostlet run`).
package configured

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/user"
	"path/filepath"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/validate"
)

// Deps are what sources need besides their own config.
type Deps struct {
	// StateDir holds the git sources' caches (stateDir/git/NAME).
	StateDir string
	// Etcd reads etcd sources; nil when no etcd.endpoints are configured
	// (an etcd source then fails to read, saying so).
	Etcd sources.EtcdKV
	// Validate checks what is pushed to a push source.
	Validate validate.Options
	Log      *slog.Logger
	// Dirs reads source NAME from the local folder Dirs[NAME] instead of
	// its configured location (`--source NAME=DIR`): a git source's paths
	// inside a checkout, any other source's whole folder.
	Dirs map[string]string
	// Clock is what the sources poll, retry and time their reads on; nil
	// means clock.Real.
	Clock clock.Clock
	// Compose renders the Compose projects sources hold; nil makes a
	// project an error.
	Compose *project.Renderer
	// Hostname and EtcdPrefix name the key a git source with via: etcd
	// watches (fleet.DesiredKey); All sets them from the config.
	Hostname, EtcdPrefix string
}

// New returns the source for c.
func New(c config.Source, d Deps) (sources.Source, error) {
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if dir := d.Dirs[c.Name]; dir != "" {
		if c.Type == config.TypeGit {
			ch := gitsource.NewCheckout(c, dir, log)
			ch.WithClock(d.Clock)
			return ch.WithCompose(d.Compose), nil
		}
		return sources.NewFolder(c, dir, []string{"."}, log).WithClock(d.Clock).WithCompose(d.Compose), nil
	}
	switch c.Type {
	case config.TypeFile:
		return sources.NewFile(c, log).WithClock(d.Clock).WithCompose(d.Compose), nil
	case config.TypeHTTP:
		return sources.NewHTTP(c, log).WithClock(d.Clock).WithCompose(d.Compose), nil
	case config.TypeGit:
		if c.Via == config.ViaEtcd {
			return sources.NewPublished(c, d.Etcd, fleet.DesiredKey(d.EtcdPrefix, d.Hostname, c.Name), log).WithClock(d.Clock), nil
		}
		return gitsource.New(c, d.StateDir, log).WithClock(d.Clock).WithCompose(d.Compose), nil
	case config.TypeEtcd:
		return sources.NewEtcd(c, d.Etcd, log).WithClock(d.Clock).WithCompose(d.Compose), nil
	case config.TypePush:
		return sources.NewPush(c, d.Validate, log).WithCompose(d.Compose), nil
	}
	return nil, fmt.Errorf("source %s: type %s is not supported by this version yet", c.Name, c.Type)
}

// Renderer returns the renderer of the Compose projects cfg's sources
// hold, with the host's compose settings, for this host: a bind source's
// ~ is compose.home, else the home of the user this process runs as.
func Renderer(cfg *config.Config) *project.Renderer {
	if cfg == nil {
		return project.NewRenderer("", project.Host{Home: userHome()})
	}
	return project.NewRenderer(cfg.Compose.Helper, project.Host{Env: cfg.Compose.Env, Profiles: cfg.Compose.Profiles, Home: cmp.Or(cfg.Compose.Home, userHome())})
}

// OfflineRenderer is Renderer for the commands that read a host's sources
// away from its hostlet (validate, diff): ~ is compose.home, else the home
// of the user running the command, which a note on each use says may not
// be the host's.
func OfflineRenderer(cfg *config.Config) *project.Renderer {
	r := Renderer(cfg)
	r.Host.HomeIsGuess = cfg == nil || cfg.Compose.Home == ""
	return r
}

// RendererFor returns the renderer of cfg's Compose projects for another
// host (hostlet publish): ~ is compose.home, and refused without it,
// since the home of the user hostlet runs as there is not known here.
func RendererFor(cfg *config.Config) *project.Renderer {
	return project.NewRenderer(cfg.Compose.Helper, project.Host{Env: cfg.Compose.Env, Profiles: cfg.Compose.Profiles, Home: cfg.Compose.Home})
}

// userHome is the home folder of the user this process runs as (from
// the user database, else $HOME); "" when neither says.
func userHome() string {
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		return filepath.Clean(u.HomeDir)
	}
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		return filepath.Clean(h)
	}
	return ""
}

// All returns the sources of cfg, in config order.
func All(cfg *config.Config, d Deps) ([]sources.Source, error) {
	out := make([]sources.Source, 0, len(cfg.Sources))
	d.Hostname, d.EtcdPrefix = cfg.Hostname, cfg.Etcd.Prefix
	for _, c := range cfg.Sources {
		s, err := New(c, d)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// ValidateOptions are the rules of cfg's host for manifests: its host
// paths, the engine's socket (docker.host, else DOCKER_HOST) refused
// unless listed, and its policy block.
func ValidateOptions(cfg *config.Config) validate.Options {
	p := cfg.Policy
	return validate.Options{
		HostPathAllow:    cfg.HostPathAllow,
		StateDir:         cfg.StateDir,
		DataDir:          cfg.Compose.DataDir,
		DockerHost:       cmp.Or(cfg.Docker.Host, os.Getenv("DOCKER_HOST")),
		ExternalVolumes:  p.ExternalVolumes,
		ExternalNetworks: p.ExternalNetworks,
		Policy:           validate.Policy{Privileged: p.Privileged, Capabilities: p.Capabilities, HostNetwork: p.HostNetwork, Devices: p.Devices, LogDrivers: p.LogDrivers, Runtimes: p.Runtimes},
		HostLabels:       HostLabels(cfg),
	}
}

// HostLabels are the labels a pod's nodeSelector matches on cfg's host:
// its labels, and kubernetes.io/hostname and kubernetes.io/os (linux:
// hostlet runs Linux containers), as every Kubernetes node has them;
// kubernetes.io/arch is the engine's, known where the engine is
// (validate.Options.Policy.EnginePlatform), not the machine's that
// reads the config.
func HostLabels(cfg *config.Config) map[string]string {
	out := map[string]string{
		"kubernetes.io/hostname": cfg.Hostname,
		"kubernetes.io/os":       "linux",
	}
	maps.Copy(out, cfg.Labels)
	return out
}
