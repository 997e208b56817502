package release

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources/configured"
)

// Printf receives a line of a release's progress: a format of this
// package and its arguments (hosts' names, errors and reasons from etcd,
// which the printer makes safe to show).
type Printf func(format string, args ...any)

// Host is one host of a release: its sets at the revision and what
// publishing them changes.
type Host struct {
	Name   string
	Config string
	Labels map[string]string
	// Sets are the host's via: etcd sources at the revision, in config
	// order; enc their encodings.
	Sets []fleet.Published
	enc  [][]byte
	// Changed names the sources whose set (or release) differs from what
	// etcd holds (after Publish compared them); modRevs are the keys' mod
	// revisions when read (0: absent), so that a write never overwrites a
	// set written meanwhile.
	Changed []string
	modRevs map[string]int64
	// pods are the pods the host's sets make (by ID: the spec hash the
	// host will report in the pod's rollout, as diff computes them; ""
	// for a pod with secrets, whose hash only the host can make).
	pods map[string]string
}

func (h *Host) key(prefix, source string) string {
	return fleet.DesiredKey(prefix, h.Name, source)
}

// sources names the host's via: etcd sources, in config order.
func (h *Host) sources() []string {
	var srcs []string
	for _, s := range h.Sets {
		srcs = append(srcs, s.Source)
	}
	return srcs
}

// Set is what a release publishes: every host's sets at one commit, read
// and validated.
type Set struct {
	// Ref is the revision asked; Rev the commit it is.
	Ref, Rev string
	// Hosts are the hosts with a via: etcd git source, in config order.
	Hosts []*Host
	// First is the first config given: the default of etcd's endpoints
	// and prefix.
	First *config.Config
	// Skipped are hosts without a via: etcd git source.
	Skipped []string
	// Errors: every host's invalid set (host, then source:file). A set
	// with errors is never published.
	Errors []string
	byName map[string]*Host
	// waves and assigned are the waves and their hosts (Assign).
	waves    []fleet.Wave
	assigned [][]fleet.Host
}

// Input is what Render reads: host configs (one per host), the revision
// and the checkouts of the git sources.
type Input struct {
	Configs []string
	Ref     string
	// Overrides: the checkout of git source NAME (--source NAME=DIR);
	// every via: etcd source needs one.
	Overrides map[string]string
}

// Render reads every host's via: etcd git sources at in.Ref from their
// checkouts and validates each host's set: nothing is published unless
// every host's set is valid (Set.Errors). A host without such a source
// is skipped (said through printf).
func Render(ctx context.Context, in Input, printf Printf) (*Set, error) {
	set := &Set{Ref: in.Ref, byName: map[string]*Host{}}
	used := map[string]bool{}
	names := map[string]string{}
	for _, file := range in.Configs {
		cfg, err := config.Load(file)
		if err != nil {
			return nil, err
		}
		if set.First == nil {
			set.First = cfg
		}
		if prev, dup := names[cfg.Hostname]; dup {
			return nil, fmt.Errorf("host %s: configs %s and %s have the same hostname", cfg.Hostname, prev, cfg.File)
		}
		names[cfg.Hostname] = cfg.File
		h, errs, err := renderHost(ctx, cfg, in.Ref, in.Overrides, used)
		if err != nil {
			return nil, err
		}
		if h == nil {
			set.Skipped = append(set.Skipped, cfg.Hostname)
			printf("host %s: no git source with via: etcd; skipped\n", cfg.Hostname)
			continue
		}
		set.Errors = append(set.Errors, errs...)
		if err := set.add(h); err != nil {
			return nil, err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.Overrides)) {
		if !used[name] {
			return nil, fmt.Errorf("--source %s: no host given has a git source %q with via: etcd", name, name)
		}
	}
	if len(set.Errors) == 0 && len(set.Hosts) == 0 {
		return nil, errors.New("no host given has a git source with via: etcd: nothing to publish")
	}
	return set, nil
}

// add adds h, whose sets must be at the commit of the others'.
func (s *Set) add(h *Host) error {
	for _, p := range h.Sets {
		if s.Rev == "" {
			s.Rev = p.Release
		} else if p.Release != s.Rev {
			return fmt.Errorf("--ref %s is commit %s in one checkout and %s in another: publish one repository's commit", s.Ref, s.Rev, p.Release)
		}
	}
	s.Hosts = append(s.Hosts, h)
	s.byName[h.Name] = h
	return nil
}

// Assign puts the hosts in waves (fleet.Assign): before anything is read
// from or written to etcd. Publish assigns them itself when the set has
// not been, and, resuming, in the waves of the release record.
func (s *Set) Assign(waves []fleet.Wave) error {
	assigned, waves, err := fleet.Assign(s.fleetHosts(), waves)
	if err != nil {
		return err
	}
	s.assigned, s.waves = assigned, waves
	return nil
}

func (s *Set) fleetHosts() []fleet.Host {
	fh := make([]fleet.Host, len(s.Hosts))
	for i, h := range s.Hosts {
		fh[i] = fleet.Host{Name: h.Name, Labels: h.Labels}
	}
	return fh
}

// renderHost reads cfg's git sources with via: etcd from their checkouts
// at ref, as `hostlet diff --against ref:REV` reads them, and validates
// their merged set. It returns nil for a host without such a source; the
// validation errors name the host, then source:file. used collects the
// --source names read.
func renderHost(ctx context.Context, cfg *config.Config, ref string, overrides map[string]string, used map[string]bool) (*Host, []string, error) {
	h := &Host{Name: cfg.Hostname, Config: cfg.File, Labels: cfg.Labels, modRevs: map[string]int64{}}
	reads, err := h.read(ctx, cfg, ref, overrides, used)
	if err != nil || len(reads) == 0 {
		return nil, nil, err
	}
	var errs []string
	vopts := configured.ValidateOptions(cfg)
	for _, e := range hostplan.Validate(reads, vopts).Errors {
		errs = append(errs, "host "+cfg.Hostname+": "+e.Error())
	}
	h.pods = map[string]string{}
	for _, p := range hostplan.Desired(reads, vopts) {
		// A pod with secrets hashes on the host, from the host's keyed
		// hashes of their plaintexts: its version is told by the
		// release's revision alone ("").
		if !p.Manifest.HasSecrets() {
			h.pods[p.Manifest.ID] = manifest.PodHash(p.Manifest)
		} else {
			h.pods[p.Manifest.ID] = ""
		}
	}
	encErrs, err := h.encode()
	if err != nil {
		return nil, nil, err
	}
	return h, append(errs, encErrs...), nil
}

// read reads cfg's via: etcd git sources at ref into h.Sets; it returns
// them as read.
func (h *Host) read(ctx context.Context, cfg *config.Config, ref string, overrides map[string]string, used map[string]bool) ([]hostplan.Read, error) {
	compose := configured.RendererFor(cfg)
	var reads []hostplan.Read
	for _, s := range cfg.Sources {
		if s.Type != config.TypeGit || s.Via != config.ViaEtcd {
			continue
		}
		if overrides[s.Name] == "" {
			return nil, fmt.Errorf("host %s: source %s has via: etcd: give its checkout with --source %s=DIR", cfg.Hostname, s.Name, s.Name)
		}
		used[s.Name] = true
		src, err := configured.New(s, configured.Deps{Dirs: overrides, Compose: compose})
		if err != nil {
			return nil, err
		}
		ra, ok := src.(hostplan.ReadableAt)
		if !ok {
			return nil, fmt.Errorf("host %s: source %s cannot be read at a revision", cfg.Hostname, s.Name)
		}
		snap, err := ra.ReadAt(ctx, ref)
		if ce := (*gitsource.CheckoutError)(nil); errors.As(err, &ce) {
			// ReadAt speaks of diff's flag: say publish's.
			return nil, errors.New(strings.NewReplacer("--against ref: needs", "--ref needs", "--against ref:", "--ref ").Replace(err.Error()))
		}
		reads = append(reads, hostplan.Read{Snapshot: snap, Err: err})
		h.Sets = append(h.Sets, fleet.Published{Release: snap.Revision, Source: s.Name, Files: snap.Files, Manifests: snap.Manifests})
	}
	return reads, nil
}

// encode encodes h's sets as the host will read them; it returns the
// errors of those that would not decode there or not fit in one etcd
// request.
func (h *Host) encode() ([]string, error) {
	var errs []string
	for _, p := range h.Sets {
		b, err := fleet.EncodePublished(p)
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		// What the host will read must decode there (its size bounded),
		// and fit in one etcd request.
		if _, err := fleet.DecodePublished(b, p.Source); err != nil {
			errs = append(errs, fmt.Sprintf("host %s: source %s: %v", h.Name, p.Source, err))
		} else if len(b) > maxValueBytes {
			errs = append(errs, fmt.Sprintf("host %s: source %s: published set of %d bytes compressed, over the %d an etcd request holds by default", h.Name, p.Source, len(b), maxValueBytes))
		}
		h.enc = append(h.enc, b)
	}
	return errs, nil
}
