// Package desired computes the desired set of a host from its sources:
// (the sources' sets in config order, the last accepted version of each
// manifest, the pods that run) → (the pods to run, the rejections). It is
// pure: no I/O, no locks, no clock. `hostlet run` (through
// sources.Merger, which keeps and persists its inputs), `hostlet validate`
// and `hostlet diff` all compute the desired set with it, so the three
// cannot disagree.
package desired

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// ErrEmpty is the error of a source that held manifests and now reads as
// empty, while sync.allowEmpty is off: a wrong path must not prune a host.
var ErrEmpty = errors.New("source now holds no manifests")

// Kind says why an entry is in the desired set.
type Kind int

const (
	// Declared: its source declares it now and it was accepted.
	Declared Kind = iota
	// StandIn: the last accepted version of a manifest whose new version
	// is rejected: what runs, kept running.
	StandIn
	// Running: a pod that runs now, in the set of a source whose own set
	// is not known (Source.Running: `hostlet diff` and a source it could
	// not read, or a push source).
	Running
)

// Entry is one desired manifest with the revision of its source when it
// was accepted. Kind is not saved: what is saved is always Declared.
type Entry struct {
	manifest.Sourced
	Revision string
	Kind     Kind `json:"-"`
}

// Source is one source as the computation sees it: the set in effect (the
// last good set it delivered), in the source's own order.
type Source struct {
	manifest.Snapshot
	// Delivered: the source delivered a set (fresh, saved, or seeded from
	// what runs); nothing is removed until every source has (Result.Ready).
	Delivered bool
	// Running: the set is the pods that run of this source (Seed), not one
	// it delivered; its entries are Kind Running.
	Running bool
}

// Versions holds, by source and id, the last version of each manifest the
// computation accepted: a rejected new version falls back to it.
type Versions map[string]map[string]Entry

// Options configure the computation.
type Options struct {
	// AllowEmpty lets a source that held manifests read as empty.
	AllowEmpty bool
	Validate   validate.Options
}

// Input is everything the desired set is computed from.
type Input struct {
	// Sources in config order; the first to declare an id wins.
	Sources []Source
	// Accepted are the last accepted versions (nil: none known).
	Accepted Versions
	Options  Options
}

// Result is the desired set.
type Result struct {
	// Accepted: the manifests to run, in config order (source, then its
	// own order).
	Accepted []Entry
	// Rejected: every manifest not applied, with the reasons, in order.
	Rejected []validate.Rejection
	// Elsewhere: the manifests whose nodeSelector this host does not
	// match, not applied (validate.Result.Elsewhere).
	Elsewhere []validate.Elsewhere
	// Ready: every source has delivered; only then may pods be removed.
	Ready bool
	// Versions: the last accepted versions after this computation
	// (Input.Accepted without the ids their sources no longer declare,
	// with every accepted declared manifest recorded). Persist these.
	Versions Versions
}

// Admit returns source src after a read of it (snap, or the error that
// stopped the read): the read's set when it may replace the set in effect,
// else src unchanged and why not. A read fails, an empty set replaces one
// that held manifests only with AllowEmpty, and a set holding a document
// without an id is refused whole: such a read proves nothing about which
// pods to remove.
func Admit(src Source, snap manifest.Snapshot, readErr error, o Options) (Source, error) {
	if readErr != nil {
		return src, readErr
	}
	// Every reader stops at the bound; a set that is over it all the
	// same (rendered, pushed) is refused here, before it is validated.
	if len(snap.Manifests) > manifest.MaxSourceManifests {
		return src, manifest.TooManyInSource(manifest.Origin{Source: snap.Name})
	}
	if err := unidentified(snap.Manifests, o.Validate); err != nil {
		return src, err
	}
	if len(snap.Manifests) == 0 && len(src.Manifests) > 0 && !o.AllowEmpty {
		at := ""
		if src.Revision != "" {
			at = " at revision " + src.Revision
		}
		return src, fmt.Errorf("%w, but held %d%s; keeping its last good set (set sync.allowEmpty: true to allow this)", ErrEmpty, len(src.Manifests), at)
	}
	if snap.Name == "" {
		snap.Name = src.Name
	}
	if snap.Type == "" {
		snap.Type = src.Type
	}
	return Source{Snapshot: snap, Delivered: true}, nil
}

// unidentified returns an error for the first manifest without an id: a
// document that is no manifest at all (an error page, a config file) cannot
// be matched to a pod.
func unidentified(ms []manifest.Sourced, opts validate.Options) error {
	for _, s := range ms {
		if s.Manifest.ID != "" {
			continue
		}
		var reasons []string
		for _, e := range validate.Scrub(s, validate.Flatten(validate.Manifest(s, opts))) {
			reasons = append(reasons, e.Detail)
			if len(reasons) == 3 {
				reasons = append(reasons, "...")
				break
			}
		}
		return fmt.Errorf("%s: manifest %d has no id, so it cannot be matched to a pod; keeping the last good set (%s)", s.Origin, s.Origin.Index+1, strings.Join(reasons, "; "))
	}
	return nil
}

// Pod is a pod that runs now, as its containers' labels describe it.
type Pod struct {
	Source   string
	Manifest manifest.Manifest
}

// Seed returns what runs of source name (pods, sorted by id) as its set in
// effect and as its last accepted versions, as if the source had
// delivered it: `hostlet diff` starts from it and then admits what the
// sources read, and so computes what the running hostlet would. With
// nothing running of it, the source is returned not delivered.
func Seed(name, typ string, pods []Pod) (Source, map[string]Entry) {
	src := Source{Snapshot: manifest.Snapshot{Name: name, Type: typ}, Running: true}
	good := map[string]Entry{}
	pods = slices.SortedStableFunc(slices.Values(pods), func(a, b Pod) int { return strings.Compare(a.Manifest.ID, b.Manifest.ID) })
	for _, p := range pods {
		if p.Source != name {
			continue
		}
		s := manifest.Sourced{Origin: manifest.Origin{Source: name, Index: len(src.Manifests)}, Manifest: p.Manifest}
		src.Manifests = append(src.Manifests, s)
		good[p.Manifest.ID] = Entry{Sourced: s, Kind: Running}
	}
	src.Delivered = len(src.Manifests) > 0
	return src, good
}
