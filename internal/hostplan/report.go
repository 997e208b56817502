package hostplan

import (
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources/desired"
	"github.com/hostlet/hostlet/validate"
)

// Report is what `hostlet validate` reports of the sources read, text or
// JSON (docs describe the JSON).
type Report struct {
	Valid    bool                 `json:"valid"`
	Sources  []SourceReport       `json:"sources"`
	Accepted []Accepted           `json:"accepted"`
	Errors   []*manifest.Error    `json:"errors"`
	Rejected []validate.Rejection `json:"rejected"`
	// Elsewhere: the manifests for other hosts (their nodeSelector does
	// not match this host's labels), when validated against a host config.
	Elsewhere []validate.Elsewhere `json:"elsewhere,omitempty"`
	// Notes are the accepted manifests' notes (manifest.Sourced.Notes):
	// what a translation did that the author may not expect.
	Notes []*manifest.Error `json:"notes,omitempty"`
}

// SourceReport is one source of a Report.
type SourceReport struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Revision  string `json:"revision,omitempty"`
	Files     int    `json:"files"`
	Manifests int    `json:"manifests"`
	Error     string `json:"error,omitempty"`
}

// Accepted is a manifest a Report accepts.
type Accepted struct {
	ID     string          `json:"id"`
	Origin manifest.Origin `json:"origin"`
}

// Validate reports every error of the sources read: their read and decode
// errors, then the manifests the merge rejects (sources/desired, with
// nothing running), each naming its source.
func Validate(reads []Read, opts validate.Options) Report {
	rep := Report{Accepted: []Accepted{}, Errors: []*manifest.Error{}, Rejected: []validate.Rejection{}}
	in := desired.Input{Options: desired.Options{Validate: opts}}
	for _, r := range reads {
		sr := SourceReport{Name: r.Name, Type: r.Type, Revision: r.Revision, Files: r.Files, Manifests: len(r.Manifests)}
		for _, e := range validate.Flatten(r.Err) {
			if e.Origin.Source == "" {
				e.Origin.Source = r.Name
			}
			rep.Errors = append(rep.Errors, e)
		}
		if r.Err != nil {
			sr.Error = r.Err.Error()
		}
		rep.Sources = append(rep.Sources, sr)
		in.Sources = append(in.Sources, desired.Source{Snapshot: r.Snapshot, Delivered: true})
	}
	res := desired.Compute(in)
	for _, a := range res.Accepted {
		rep.Accepted = append(rep.Accepted, Accepted{ID: a.Manifest.ID, Origin: a.Origin})
		rep.Notes = append(rep.Notes, a.Notes...)
	}
	rep.Rejected = append(rep.Rejected, res.Rejected...)
	rep.Elsewhere = res.Elsewhere
	for _, rj := range res.Rejected {
		rep.Errors = append(rep.Errors, rj.Errors...)
	}
	rep.Valid = len(rep.Errors) == 0
	return rep
}
