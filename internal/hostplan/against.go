package hostplan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// What a plan is computed against (--against).
const (
	// AgainstLive: this host's Docker engine, and the rollouts saved
	// under its stateDir.
	AgainstLive = "live"
	// AgainstStatus: what the host last reported.
	AgainstStatus = "status"
	// AgainstRef: the same sources at another git revision.
	AgainstRef = "ref"
)

// Against is the side a plan is computed against: a mode, and for
// AgainstRef the revision.
type Against struct {
	Mode string
	Rev  string
}

// ParseAgainst parses --against: live, status or ref:REV.
func ParseAgainst(against string) (Against, error) {
	switch {
	case against == AgainstLive, against == AgainstStatus:
		return Against{Mode: against}, nil
	case strings.HasPrefix(against, "ref:") && strings.TrimPrefix(against, "ref:") != "":
		return Against{Mode: AgainstRef, Rev: strings.TrimPrefix(against, "ref:")}, nil
	}
	return Against{}, fmt.Errorf("--against %q: want live, status or ref:REV", against)
}

// actual returns the other side of h's plan, and what the host holds
// back or holds (nothing at another revision). Against live, the engine's
// default log driver goes into h's validation, as the agent's.
func (h *host) actual(ctx context.Context, ag Against) ([]hruntime.Container, map[string]hsync.Rollout, error) {
	switch ag.Mode {
	case AgainstLive:
		h.warnUnreadableOwnerKey()
		actual, engine, err := liveContainers(ctx, h.cfg)
		rollouts := h.savedRollouts()
		if err != nil {
			return nil, nil, err
		}
		h.vopts.Policy.DefaultLogDriver, h.vopts.Policy.EnginePlatform = engine.LogDriver, engine.Platform
		h.vopts.Policy.EnginePodman = engine.Podman()
		return actual, rollouts, nil
	case AgainstStatus:
		return h.statusContainers(ctx)
	default:
		actual, err := h.refContainers(ctx, ag.Rev)
		return actual, nil, err
	}
}

// warnUnreadableOwnerKey warns when the host's owner key is there but
// cannot be read (by a user who may not read stateDir): the containers
// under chosen names are then not seen. A missing key is a host where
// hostlet never ran, with none.
func (h *host) warnUnreadableOwnerKey() {
	path := filepath.Join(h.cfg.StateDir, hruntime.OwnerKeyFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || hruntime.ReadOwnerKey(h.cfg.StateDir) != nil || h.opts.Warnings == nil {
		return
	}
	fmt.Fprintf(h.opts.Warnings, "hostlet: warning: host %s: the owner key %s cannot be read; containers under the names manifests chose are not seen (they show as to be created)\n", h.cfg.Hostname, path)
}

// liveContainers lists the host's containers, with its engine (its
// default log driver and platform go into validation, as the agent's).
func liveContainers(ctx context.Context, cfg *config.Config) ([]hruntime.Container, hruntime.Engine, error) {
	rt, err := hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, slog.New(slog.DiscardHandler), hruntime.WithOwnerKey(hruntime.ReadOwnerKey(cfg.StateDir)))
	if err != nil {
		return nil, hruntime.Engine{}, err
	}
	defer rt.Close()
	list, err := rt.List(ctx)
	return list, rt.Engine(), err
}

// savedRollouts reads the rollouts this host's hostlet saved under
// stateDir. No stateDir or file is none; one that cannot be read or
// decoded is none too, with a warning: its held and held back pods then
// show as changes.
func (h host) savedRollouts() map[string]hsync.Rollout {
	if h.cfg.StateDir == "" {
		return nil
	}
	r, err := hsync.ReadRollouts(h.cfg.StateDir)
	if err != nil {
		if h.opts.Warnings != nil {
			fmt.Fprintf(h.opts.Warnings, "hostlet: warning: host %s: %v; held and held back pods show as changes\n", h.cfg.Hostname, err)
		}
		return nil
	}
	return r
}

// statusContainers returns the containers and the pods' rollouts the
// host last reported.
func (h host) statusContainers(ctx context.Context) ([]hruntime.Container, map[string]hsync.Rollout, error) {
	if h.opts.Status == nil {
		return nil, nil, errors.New("--against status: no way to read the host's status")
	}
	doc, err := h.opts.Status(ctx, h.cfg)
	if err != nil {
		return nil, nil, err
	}
	rollouts := map[string]hsync.Rollout{}
	for _, p := range doc.Pods {
		if p.Rollout != nil {
			rollouts[p.ID] = *p.Rollout
		}
	}
	return hsync.FromStatus(h.cfg.Instance, doc.Pods), rollouts, nil
}

// envHasher is the hasher a plan compares env values with: the host's
// key when the plan is computed on the host and may read it
// (stateDir/env-hash.key, never created nor changed here), so that
// reasons say which env value changed; else a random key for this run, so
// that values recorded by the host (in labels or its status) compare with
// nothing and a reason never claims an env value changed without knowing
// it. Hashes never appear in a plan either way.
func envHasher(cfg *config.Config) *hsync.EnvHasher {
	if h, err := hsync.ReadEnvHasher(cfg.StateDir); err == nil {
		return h
	}
	return hsync.RandomEnvHasher()
}

// ReadableAt is a source that can be read at another revision of its
// repository (a git source; gitsource.Checkout, given a checkout).
type ReadableAt interface {
	// ReadAt reads the source at rev; a *gitsource.CheckoutError when it
	// cannot be read there at all.
	ReadAt(ctx context.Context, rev string) (manifest.Snapshot, error)
}

// checkReadableAt fails when a source that is read at rev has no checkout
// (--source): a git source without one answers ReadAt at once, without
// fetching anything.
func checkReadableAt(ctx context.Context, srcs []sources.Source, rev string, overrides map[string]string) error {
	for _, s := range srcs {
		if ra, ok := s.(ReadableAt); ok && overrides[s.Name()] == "" {
			if _, err := ra.ReadAt(ctx, rev); err != nil {
				return err
			}
		}
	}
	return nil
}

// refContainers simulates the containers the sources would have made at
// git revision rev: git sources read from their checkout at rev, other
// sources as they are now (h.reads).
func (h host) refContainers(ctx context.Context, rev string) ([]hruntime.Container, error) {
	var reads, atRev []Read
	for i, s := range h.srcs {
		ra, ok := s.(ReadableAt)
		if !ok {
			// Read errors of these are the desired side's, reported there.
			reads = append(reads, h.reads[i])
			continue
		}
		snap, err := ra.ReadAt(ctx, rev)
		if ce := (*gitsource.CheckoutError)(nil); errors.As(err, &ce) {
			return nil, err
		}
		r := Read{Snapshot: snap, Err: err}
		reads = append(reads, r)
		atRev = append(atRev, r)
	}
	if errs := ReadErrors(atRev); len(errs) > 0 {
		return nil, fmt.Errorf("at %s: %s", rev, strings.Join(errs, "; "))
	}
	pods := Desired(reads, h.vopts)
	return hsync.Simulate(h.cfg.Instance, pods, h.env), nil
}
