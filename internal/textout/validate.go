package textout

import (
	"fmt"
	"io"

	"github.com/hostlet/hostlet/internal/hostplan"
)

// Validate prints a validate report as text: each error (a file's name,
// an etcd key, a value: from outside, through Text), then the verdict.
func Validate(w io.Writer, r hostplan.Report) error {
	for _, e := range r.Errors {
		if _, err := fmt.Fprintln(w, Text(e.Error())); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintln(w, "note: "+Text(n.Error())); err != nil {
			return err
		}
	}
	for _, e := range r.Elsewhere {
		if _, err := fmt.Fprintln(w, Text(e.String())); err != nil {
			return err
		}
	}
	total := len(r.Accepted) + len(r.Rejected)
	if r.Valid {
		_, err := fmt.Fprintf(w, "OK: %d manifests in %d sources, all valid.\n", total, len(r.Sources))
		return err
	}
	_, err := fmt.Fprintf(w, "INVALID: %d errors; %d manifests valid, %d rejected, in %d sources.\n",
		len(r.Errors), len(r.Accepted), len(r.Rejected), len(r.Sources))
	return err
}
