package hostplan

import (
	"fmt"

	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/desired"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// Desired computes the pods the sources read make (sources/desired, with
// nothing running). `--against ref:REV` simulates REV with it, and
// publish takes the spec hashes a host will report from it: a manifest
// rejected there counts as absent.
func Desired(reads []Read, vopts validate.Options) []hsync.Pod {
	in := desired.Input{Options: desired.Options{Validate: vopts}}
	for _, r := range reads {
		in.Sources = append(in.Sources, desired.Source{Snapshot: r.Snapshot, Delivered: true})
	}
	var pods []hsync.Pod
	for _, e := range desired.Compute(in).Accepted {
		pods = append(pods, hsync.NewPod(e.Manifest, e.Origin.Source, e.Revision))
	}
	return pods
}

// Merged is the desired side as the running hostlet would merge it.
type Merged struct {
	// Pods to run (pods that stay as they run are not among them).
	Pods []hsync.Pod
	// Rejected: every rejected manifest, in order.
	Rejected []validate.Rejection
	// Stay: IDs of pods that keep running as they are.
	Stay map[string]bool
	// Errors: why a source keeps its last good set, besides read errors.
	Errors []string
	// Elsewhere: the manifests for other hosts (their nodeSelector).
	Elsewhere []validate.Elsewhere
}

// MergeLikeRun computes the desired side as the running hostlet would
// (sources/desired), with the pods that run now (actual) as every
// source's last good set: a source that failed to read, holds a manifest
// without an id, or reads as empty (without sync.allowEmpty) keeps what
// runs of it, and so does a push source (what was pushed to the host is
// not known here); a rejected manifest's running version stands in for
// it. Stand-ins and what runs stay as they run: the containers' labels
// carry enough to weigh them against other manifests, not to recreate
// them.
func MergeLikeRun(reads []Read, actual []hruntime.Container, allowEmpty bool, vopts validate.Options) Merged {
	m := Merged{Stay: map[string]bool{}}
	var running []desired.Pod
	for _, ap := range hsync.Applied(actual) {
		running = append(running, desired.Pod{Source: ap.Source, Manifest: ap.Manifest})
	}
	opts := desired.Options{AllowEmpty: allowEmpty, Validate: vopts}
	in := desired.Input{Accepted: desired.Versions{}, Options: opts}
	for _, r := range reads {
		src, good := desired.Seed(r.Name, r.Type, running)
		in.Accepted[r.Name] = good
		if r.Pushed {
			src.Delivered = true
		} else {
			var err error
			if src, err = desired.Admit(src, r.Snapshot, r.Err, opts); err != nil && r.Err == nil {
				m.Errors = append(m.Errors, fmt.Sprintf("source %s: %s", r.Name, sources.ErrorText(err)))
			}
		}
		in.Sources = append(in.Sources, src)
	}
	res := desired.Compute(in)
	for _, e := range res.Accepted {
		if e.Kind != desired.Declared {
			m.Stay[e.Manifest.ID] = true
			continue
		}
		m.Pods = append(m.Pods, hsync.NewPod(e.Manifest, e.Origin.Source, e.Revision))
	}
	m.Rejected, m.Elsewhere = res.Rejected, res.Elsewhere
	return m
}
