package textout

import (
	"fmt"
	"io"
	"strings"

	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// Plans prints the plans of `hostlet diff`, each under a line naming its
// host and config when there are several; color paints them in ANSI
// colours.
func Plans(w io.Writer, plans []hostplan.Plan, color bool) {
	for i, p := range plans {
		if len(plans) > 1 {
			if i > 0 {
				fmt.Fprintln(w)
			}
			host := p.Host
			if host == "" {
				host = "?"
			}
			Fprintf(w, "== host %s (%s) ==\n", host, p.Config)
		}
		Plan(w, p, color)
	}
}

// Plan prints a host's plan as DESIGN.md shows it. What it shows comes
// from sources, the engine and hosts' reports: each line goes through
// Text before its colour is put on.
func Plan(w io.Writer, p hostplan.Plan, color bool) {
	paint := painter(color)
	for _, e := range p.Errors {
		fmt.Fprintln(w, paint("31", "error: "+e))
	}
	if !p.Planned {
		return
	}
	for _, pp := range p.Pods {
		writePod(w, pp, paint)
	}
	for _, r := range p.Rejected {
		origin := manifest.Origin{Source: r.Source, File: r.File}
		line := fmt.Sprintf("%s: rejected %s: %s", origin, r.ID, strings.Join(stripOrigin(r.Reasons), "; "))
		if r.Running {
			line += " (the running version stays)"
		}
		fmt.Fprintln(w, paint("31", line))
	}
	for _, e := range p.Elsewhere {
		fmt.Fprintln(w, paint("2", e.String()))
	}
	writeSummary(w, p.Summary)
}

// painter returns how text output paints a line: through Text, then in
// ANSI colour code when color.
func painter(color bool) func(code, s string) string {
	return func(code, s string) string {
		s = Text(s)
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
}

// writePod prints a pod of the plan: a line for the pod, then one for
// each container it changes.
func writePod(w io.Writer, p hostplan.PodPlan, paint func(code, s string) string) {
	src := p.Source
	if p.Revision != "" && p.Action != "remove" {
		src += " @ " + shortRev(p.Revision)
	}
	switch {
	case p.HeldBack != nil:
		// What run --once would not do: nothing to list.
		fmt.Fprintln(w, paint("33", fmt.Sprintf("~ pod %s (%s): %s", p.ID, src, heldBackText(*p.HeldBack))))
		return
	case p.Held != nil:
		fmt.Fprintln(w, paint("36", fmt.Sprintf("pod %s (%s): %s; waiting:", p.ID, src, heldText(*p.Held))))
	case p.Action == "remove":
		fmt.Fprintln(w, paint("31", fmt.Sprintf("- pod %s (%s)", p.ID, src)))
		return
	case p.Action == "create":
		fmt.Fprintln(w, paint("32", fmt.Sprintf("+ pod %s (%s)", p.ID, src)))
	default:
		Fprintf(w, "pod %s (%s)\n", p.ID, src)
	}
	writeChanges(w, p.Changes, paint)
	for _, n := range p.Notes {
		fmt.Fprintln(w, "  note: "+Text(n))
	}
}

// writeChanges prints a line for each container change shown (not the
// infra container's, not "none"), their names aligned.
func writeChanges(w io.Writer, changes []hostplan.Change, paint func(code, s string) string) {
	shown := func(c hostplan.Change) bool { return c.Container != hruntime.InfraName && c.Action != "none" }
	width := 0
	for _, c := range changes {
		if shown(c) {
			width = max(width, len(c.Container))
		}
	}
	for _, c := range changes {
		if !shown(c) {
			continue
		}
		line := fmt.Sprintf("%-*s  %s", width, c.Container, c.Action)
		if c.Build != "" {
			line += " (build " + c.Build + ")"
		}
		if len(c.Reasons) > 0 && c.Action != string(hsync.ActionCreate) {
			line += ": " + strings.Join(c.Reasons, "; ")
		}
		switch hsync.Action(c.Action) {
		case hsync.ActionCreate:
			fmt.Fprintln(w, "  "+paint("32", "+ "+line))
		case hsync.ActionRecreate:
			fmt.Fprintln(w, "  "+paint("33", "~ "+line))
		case hsync.ActionRestart:
			fmt.Fprintln(w, "  "+paint("33", "! "+line))
		case hsync.ActionRemove:
			fmt.Fprintln(w, "  "+paint("31", "- "+line))
		}
	}
}

// writeSummary prints the plan's summary line.
func writeSummary(w io.Writer, s hostplan.Summary) {
	restart := ""
	if s.Restart > 0 {
		restart = fmt.Sprintf(", %d to restart", s.Restart)
	}
	// Like restarts, the counts of what waits show only when there is some.
	waiting := ""
	if s.HeldBack > 0 {
		waiting += fmt.Sprintf(", %d held back", s.HeldBack)
	}
	if s.Held > 0 {
		waiting += fmt.Sprintf(", %d held", s.Held)
	}
	fmt.Fprintf(w, "Plan: %d to create, %d to recreate%s, %d to remove, %d unchanged, %d rejected%s.\n", s.Create, s.Recreate, restart, s.Remove, s.Unchanged, s.Rejected, waiting)
}

// heldBackText says why a pod's desired version is not applied.
func heldBackText(hb hostplan.HeldBack) string {
	text := "held back: rolled back"
	if hb.Revision != "" {
		text += " at " + short(hb.Revision)
	}
	if hb.Reason != "" {
		text += ": " + hb.Reason
	}
	return text
}

// heldText says who holds a pod and why.
func heldText(h hsync.Hold) string {
	text := "held by " + h.By
	if h.By == "" {
		text = "held"
	}
	if h.Reason != "" {
		text += ": " + h.Reason
	}
	return text
}

// stripOrigin drops the "source:file: pod "x": " prefix of a reason, which
// the "source:file: rejected ID" line already says.
func stripOrigin(reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		if j := strings.Index(r, "\": "); j >= 0 && strings.Contains(r[:j], "pod \"") {
			r = r[j+3:]
		}
		out[i] = r
	}
	return out
}

// shortRev is a 40-hex commit cut to 7 characters, as git shows it; any
// other revision as it is.
func shortRev(rev string) string {
	if len(rev) == 40 && !strings.Contains(rev, ":") {
		return rev[:7]
	}
	return rev
}
