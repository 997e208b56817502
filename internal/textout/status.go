package textout

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/redact"
	hsync "github.com/hostlet/hostlet/sync"
)

// HostStatus is what `hostlet status` shows: a host's last report and
// whether it is alive.
type HostStatus struct {
	Host  string
	Alive bool
	Doc   api.Document
}

// Status prints a host's report as text: every value in it is the host's
// (or etcd's, where anyone who can write there may have forged it), so
// each goes through Text, on its own row.
func Status(w io.Writer, v HostStatus) error {
	d := v.Doc
	alive := "alive"
	if !v.Alive {
		alive = "NOT ALIVE (liveness key lapsed; last report below)"
	}
	Fprintf(w, "host %s: %s; hostlet %s; reported %s\n", v.Host, alive, d.Version, d.Time.Format(time.RFC3339))
	syncErr := d.LastSync.Error
	if syncErr == "" {
		syncErr = "none"
	}
	Fprintf(w, "last sync %s (%d ms), error: %s\n", d.LastSync.Start.Format(time.RFC3339), d.LastSync.DurMs, syncErr)
	if d.Window != nil {
		Fprintf(w, "maintenance window: %s\n", windowText(*d.Window))
	}
	fmt.Fprintln(w)
	if err := statusTables(w, d); err != nil {
		return err
	}
	statusProblems(w, d)
	return nil
}

// statusTables prints the report's sources and its pods' containers, a
// row each.
func statusTables(w io.Writer, d api.Document) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tTYPE\tREVISION\tLAST SUCCESS\tMANIFESTS\tERROR")
	for _, s := range d.Sources {
		last := "never"
		if !s.LastSuccess.IsZero() {
			last = s.LastSuccess.Format(time.RFC3339)
		}
		errText := s.Error
		if s.Notice != "" {
			errText = strings.TrimPrefix(errText+"; ", "; ") + "notice: " + s.Notice
		}
		Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.Type, short(s.Revision), last, s.Manifests, dash(errText))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POD\tCONTAINER\tPHASE\tSTATE\tRESTARTS\tREVISION\tIMAGE\tREASON")
	for _, p := range d.Pods {
		reason := p.Reason
		if p.Message != "" {
			reason += ": " + p.Message
		}
		for _, c := range p.Containers {
			Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", p.ID, c.Name, p.Phase, c.State, c.Restarts, short(p.Revision), c.Image, dash(reason))
		}
	}
	return tw.Flush()
}

// statusProblems prints, below the tables, the rollouts that say
// something, the state files' problems and the rejected manifests.
func statusProblems(w io.Writer, d api.Document) {
	var rollouts []string
	for _, p := range d.Pods {
		if text := rolloutText(p.Rollout); text != "" {
			rollouts = append(rollouts, "  "+p.ID+": "+text)
		}
	}
	if len(rollouts) > 0 {
		fmt.Fprintf(w, "\nrollouts:\n")
		for _, r := range rollouts {
			Fprintf(w, "%s\n", r)
		}
	}
	if len(d.StateErrors) > 0 {
		fmt.Fprintf(w, "\nstate file problems (stateDir):\n")
		for _, p := range d.StateErrors {
			kept := ""
			if p.KeptAs != "" {
				kept = " (kept as " + p.KeptAs + ")"
			}
			Fprintf(w, "  %s: %s failed since %s: %s%s\n", p.File, p.Op, p.Since.Format(time.RFC3339), p.Error, kept)
		}
	}
	if len(d.Rejected) > 0 {
		fmt.Fprintf(w, "\nrejected manifests:\n")
		for _, r := range d.Rejected {
			Fprintf(w, "  %s (%s): %s\n", r.ID, r.Source, strings.Join(r.Reasons, "; "))
		}
	}
}

// windowText says whether the maintenance window is open, when the next
// opens and until when a force (POST /sync?force=1) applies changes
// anyway.
func windowText(win hsync.Window) string {
	text := "open"
	if !win.Open {
		text = "closed"
		if !win.Next.IsZero() {
			text += ", next opens " + win.Next.Format(time.RFC3339)
		}
	}
	if !win.ForcedUntil.IsZero() {
		text += "; forced until " + win.ForcedUntil.Format(time.RFC3339)
	}
	return text
}

// rolloutText says where a pod's update stands when that says something:
// rolled back, held or progressing ("" when complete or unknown).
func rolloutText(r *hsync.Rollout) string {
	if r == nil {
		return ""
	}
	switch r.State {
	case hsync.RolloutRolledBack:
		text := "ROLLED BACK"
		if r.Reason != "" {
			text += ": " + r.Reason
		}
		if r.Revision != "" {
			text += " (revision " + short(r.Revision) + ")"
		}
		return text
	case hsync.RolloutHeld:
		by, since := "", r.Since
		if r.Hold != nil {
			by, since = r.Hold.By, r.Hold.Since
		}
		text := "HELD"
		if by != "" {
			text += " by " + by
		}
		if !since.IsZero() {
			text += " since " + since.Format(time.RFC3339)
		}
		if r.Reason != "" {
			text += ": " + r.Reason
		}
		return text
	case hsync.RolloutProgressing:
		if r.Reason == "" {
			return "progressing"
		}
		return "progressing: " + r.Reason
	}
	return ""
}

// Endpoints shows etcd endpoints without their credentials, as the
// CLI's errors name them: "[https://etcd-1:2379 https://etcd-2:2379]".
func Endpoints(eps []string) string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = redact.URL(e)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// short is a 40-hex commit cut to 12 characters; any other revision
// as it is.
func short(rev string) string {
	if len(rev) == 40 && !strings.Contains(rev, ":") {
		return rev[:12]
	}
	return rev
}

// dash is s, or "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
