package desired

import (
	"reflect"
	"sort"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// maxPasses bounds the passes that weigh stand-ins (each pass adds at
// least one; a pass that adds none ends the loop).
const maxPasses = 16

// key names a manifest of a source.
type key struct{ source, id string }

// Compute merges the sources in config order into the desired set. Field
// rules, duplicate ids and host-port conflicts are checked in that order
// (validate.Set): the first source, file and manifest to declare an id,
// or to bind a host port, wins. A manifest whose new version is rejected
// keeps its last accepted version applied (a stand-in), weighed before
// every other manifest, so that a newcomer taking its host port is the one
// rejected: a rejected manifest never takes a running pod down. The
// rejection is reported all the same, unless the stand-in is the very
// manifest rejected and it won in the end.
func Compute(in Input) Result {
	good := declaredVersions(in.Sources, in.Accepted)
	res := Result{Ready: true}
	first := make([]manifest.Snapshot, len(in.Sources))
	for i, s := range in.Sources {
		res.Ready = res.Ready && s.Delivered
		first[i] = s.Snapshot
	}
	initial := validate.Set(first, in.Options.Validate)
	final, standIn, rejected := weighStandIns(in.Sources, good, initial, in.Options.Validate)
	res.Rejected = dropWonStandIns(in.Sources, good, rejected, standIn, final.Accepted)
	res.Accepted, res.Versions = entries(in.Sources, good, final.Accepted, standIn)
	res.Elsewhere = final.Elsewhere
	return res
}

// declaredVersions copies the last accepted versions of every source,
// without the ids the source no longer declares.
func declaredVersions(srcs []Source, accepted Versions) Versions {
	out := make(Versions, len(srcs))
	for _, s := range srcs {
		declared := map[string]bool{}
		for _, m := range s.Manifests {
			declared[m.Manifest.ID] = true
		}
		v := map[string]Entry{}
		for id, e := range accepted[s.Name] {
			if declared[id] {
				v[id] = e
			}
		}
		out[s.Name] = v
	}
	return out
}

// weighStandIns adds the stand-ins: where a rejected manifest's id would
// not run at all, its last accepted version (what runs) stands in for it,
// weighed before every other manifest. A duplicate that loses to an
// earlier source does not stand in: its pod runs, from the source that
// wins. Passes repeat until no new stand-in appears. It returns the last
// pass, the stand-ins and every rejection of every pass (each once).
func weighStandIns(srcs []Source, good Versions, initial validate.Result, vopts validate.Options) (validate.Result, map[key]bool, []validate.Rejection) {
	rejected := append([]validate.Rejection(nil), initial.Rejected...)
	reported := map[key]bool{}
	for _, rj := range rejected {
		reported[key{rj.Source, rj.ID}] = true
	}
	standIn := map[key]bool{}
	last := initial
	for pass := 0; addStandIns(last, good, standIn) && pass < maxPasses; pass++ {
		last = validate.Set(withStandIns(srcs, good, standIn), vopts)
		for _, rj := range last.Rejected {
			if k := (key{rj.Source, rj.ID}); !reported[k] {
				reported[k] = true
				rejected = append(rejected, rj)
			}
		}
	}
	return last, standIn, rejected
}

// addStandIns marks, for every manifest r rejects whose id r does not run
// otherwise and that has a last accepted version, that version as its
// stand-in. It reports whether it marked any.
func addStandIns(r validate.Result, good Versions, standIn map[key]bool) bool {
	running := map[string]bool{}
	for _, a := range r.Accepted {
		running[a.Manifest.ID] = true
	}
	grew := false
	for _, rj := range r.Rejected {
		k := key{rj.Source, rj.ID}
		if running[rj.ID] || standIn[k] {
			continue
		}
		if _, ok := good[rj.Source][rj.ID]; !ok {
			continue
		}
		standIn[k], running[rj.ID], grew = true, true, true
	}
	return grew
}

// withStandIns returns the sources with every stand-in moved to a first
// source of its own (the incumbents, each once, named by its own source).
func withStandIns(srcs []Source, good Versions, standIn map[key]bool) []manifest.Snapshot {
	incumbents := manifest.Snapshot{Name: "running"}
	seen := map[key]bool{}
	out := []manifest.Snapshot{incumbents}
	for _, s := range srcs {
		list := make([]manifest.Sourced, 0, len(s.Manifests))
		for _, m := range s.Manifests {
			k := key{s.Name, m.Manifest.ID}
			if !standIn[k] {
				list = append(list, m)
				continue
			}
			if !seen[k] {
				seen[k] = true
				out[0].Manifests = append(out[0].Manifests, good[s.Name][m.Manifest.ID].Sourced)
			}
		}
		out = append(out, manifest.Snapshot{Name: s.Name, Manifests: list})
	}
	return out
}

// dropWonStandIns drops the report of a manifest rejected in the first
// pass whose running version, identical to it, stands in and is accepted:
// the conflict was with a newcomer that lost in the end.
func dropWonStandIns(srcs []Source, good Versions, rejected []validate.Rejection, standIn map[key]bool, accepted []manifest.Sourced) []validate.Rejection {
	if len(standIn) == 0 {
		return rejected
	}
	won := map[key]bool{}
	for _, a := range accepted {
		won[key{a.Origin.Source, a.Manifest.ID}] = true
	}
	byName := map[string]Source{}
	for _, s := range srcs {
		byName[s.Name] = s
	}
	kept := rejected[:0]
	for _, rj := range rejected {
		k := key{rj.Source, rj.ID}
		if src, ok := byName[rj.Source]; ok && standIn[k] && won[k] {
			// A manifest with decode errors is never its running version,
			// even where the fields it has are the same (a Compose key
			// hostlet refuses leaves no field behind).
			if cur, ok := declared(src, rj.ID); ok && len(cur.Errors) == 0 && reflect.DeepEqual(cur.Manifest, good[rj.Source][rj.ID].Manifest) {
				continue
			}
		}
		kept = append(kept, rj)
	}
	return kept
}

// declared returns the manifest the source now declares for id.
func declared(src Source, id string) (manifest.Sourced, bool) {
	for _, s := range src.Manifests {
		if s.Manifest.ID == id {
			return s, true
		}
	}
	return manifest.Sourced{}, false
}

// entries maps the accepted manifests back to entries in config order
// (source, then the position of the id's first declaration in it): a
// stand-in is its last accepted version; any other manifest is recorded
// as its id's last accepted version.
func entries(srcs []Source, good Versions, accepted []manifest.Sourced, standIn map[key]bool) ([]Entry, Versions) {
	rank, byName := map[key]int{}, map[string]Source{}
	for _, s := range srcs {
		byName[s.Name] = s
		for _, m := range s.Manifests {
			if k := (key{s.Name, m.Manifest.ID}); !hasRank(rank, k) {
				rank[k] = len(rank)
			}
		}
	}
	accepted = append([]manifest.Sourced(nil), accepted...)
	sort.SliceStable(accepted, func(i, j int) bool {
		return rank[key{accepted[i].Origin.Source, accepted[i].Manifest.ID}] < rank[key{accepted[j].Origin.Source, accepted[j].Manifest.ID}]
	})
	var out []Entry
	for _, a := range accepted {
		src, ok := byName[a.Origin.Source]
		if !ok {
			continue
		}
		id := a.Manifest.ID
		if standIn[key{src.Name, id}] {
			e := good[src.Name][id]
			e.Kind = StandIn
			out = append(out, e)
			continue
		}
		e := Entry{Sourced: a, Revision: src.Revision}
		if old, ok := good[src.Name][id]; !ok || !reflect.DeepEqual(old.Sourced, e.Sourced) || old.Revision != e.Revision {
			good[src.Name][id] = e
		}
		if src.Running {
			e.Kind = Running
		}
		out = append(out, e)
	}
	return out, good
}

func hasRank(rank map[key]int, k key) bool {
	_, ok := rank[k]
	return ok
}
