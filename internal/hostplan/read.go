package hostplan

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	"github.com/hostlet/hostlet/validate"
)

// Read is one source read once: its snapshot and the read's error.
type Read struct {
	manifest.Snapshot
	Err error
	// Pushed: a push source read without --source. Its set is what was
	// pushed to the running hostlet, unknown here.
	Pushed bool
}

// ReadPath reads a PATH argument as one source named after it. Files
// inside a folder are named relative to it; a file argument is the source.
func ReadPath(ctx context.Context, path string, r *project.Renderer) Read {
	base, paths := "", []string{path}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		base, paths = path, []string{"."}
	}
	snap, err := sources.ReadTree(ctx, base, paths, path, r)
	snap.Type = config.TypeFile
	if base == "" {
		for i := range snap.Manifests {
			snap.Manifests[i].Origin.File = ""
			for _, e := range slices.Concat(snap.Manifests[i].Errors, snap.Manifests[i].Notes) {
				e.Origin.File = ""
			}
		}
		for _, e := range validate.Flatten(err) {
			e.Origin.File = ""
		}
	}
	return Read{Snapshot: snap, Err: err}
}

// OpenSources makes every configured source, reading source NAME from
// overrides[NAME] when given; close releases what they hold.
func OpenSources(cfg *config.Config, overrides map[string]string) (srcs []sources.Source, close func(), err error) {
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		if !hasSource(cfg, name) {
			return nil, nil, fmt.Errorf("--source %s: no source named %q in %s", name, name, ConfigName(cfg))
		}
	}
	deps := configured.Deps{Dirs: overrides, Compose: configured.OfflineRenderer(cfg)}
	close = func() {}
	if len(cfg.Etcd.Endpoints) > 0 {
		etcd, err := sources.DialEtcd(cfg.Etcd.Endpoints)
		if err != nil {
			return nil, nil, err
		}
		deps.Etcd, close = etcd, func() { etcd.Close() }
	}
	if srcs, err = configured.All(cfg, deps); err != nil {
		close()
		return nil, nil, err
	}
	return srcs, close, nil
}

// ReadSources reads every source once, in order.
func ReadSources(ctx context.Context, srcs []sources.Source) []Read {
	out := make([]Read, 0, len(srcs))
	for _, s := range srcs {
		snap, err := s.Read(ctx)
		r := Read{Snapshot: snap, Err: err}
		if errors.Is(err, sources.ErrPushOnly) {
			r.Err, r.Pushed = nil, true
		}
		out = append(out, r)
	}
	return out
}

// ReadConfigured reads every configured source once, in config order.
func ReadConfigured(ctx context.Context, cfg *config.Config, overrides map[string]string) ([]Read, error) {
	srcs, close, err := OpenSources(cfg, overrides)
	if err != nil {
		return nil, err
	}
	defer close()
	return ReadSources(ctx, srcs), nil
}

// ReadErrors lists the errors of the sources that could not be read or
// decoded, one line per error; each names its source once.
func ReadErrors(reads []Read) []string {
	var out []string
	for _, r := range reads {
		for _, e := range validate.Flatten(r.Err) {
			msg := e.Error()
			if e.Origin.Source == "" && !strings.HasPrefix(msg, "source "+r.Name+":") {
				msg = "source " + r.Name + ": " + msg
			}
			out = append(out, msg)
		}
	}
	return out
}

// ConfigName names cfg in messages: its file, or that none was found.
func ConfigName(cfg *config.Config) string {
	if cfg.File == "" {
		return "the configuration (no config file found)"
	}
	return cfg.File
}

func hasSource(cfg *config.Config, name string) bool {
	for _, s := range cfg.Sources {
		if s.Name == name {
			return true
		}
	}
	return false
}

// ParseSourceFlags reads repeated --source NAME=DIR flags (validate,
// diff, publish, images): each name once, both parts given.
func ParseSourceFlags(flags []string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range flags {
		name, dir, ok := strings.Cut(f, "=")
		if !ok || name == "" || dir == "" {
			return nil, fmt.Errorf("--source %q: want NAME=DIR", f)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--source %q: source %s given twice", f, name)
		}
		out[name] = dir
	}
	return out, nil
}
