package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

func newDiffCommand(g *globalFlags) *cobra.Command {
	var (
		against     string
		output      string
		sourceFlags []string
	)
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Dry run: the plan `run --once` would apply; nothing is changed",
		Long: `Show what hostlet would do to each host: the plan "hostlet run --once"
would apply, computed by the same function. Nothing is changed.

--against live       this host's Docker engine (default)
--against status     what the host last reported (its API, or etcd): for CI without Docker
--against ref:REV    the same sources at git revision REV (needs --source NAME=DIR for
                     every git source, DIR a checkout); other sources read the same on both sides

--source NAME=DIR reads source NAME from a local folder as it is (uncommitted edits
included) instead of its URL, so CI needs no network or credentials. --config may be
given once per host; each host's plan is printed under its name.

Sources are merged as the running hostlet merges them: a rejected manifest of a pod
that runs leaves that pod as it runs, and a source that cannot be read keeps what
runs of it. Env values never appear. docs/diff.md describes the output.

Against live (the rollouts saved under stateDir) and status, a pod whose desired
version the host rolled back is shown "held back" and a pod an operator holds
"held by": their changes are what "run --once" would not do, counted apart
(held back, held) and not as changes.

Exit status: 0 no changes, 2 changes, 1 errors or invalid/rejected manifests (after the
plan is printed). Changes that are all held back or held are no changes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			overrides, err := parseSourceFlags(sourceFlags)
			if err != nil {
				return err
			}
			if _, err := hostplan.ParseAgainst(against); err != nil {
				return err
			}
			files := g.configFiles
			if len(files) == 0 {
				files = []string{""}
			}
			opts := hostplan.Options{Overrides: overrides, Status: hostStatus, Warnings: cmd.ErrOrStderr()}
			var hosts []hostPlan
			for _, f := range files {
				hosts = append(hosts, hostPlan(hostplan.Diff(cmd.Context(), f, against, opts)))
			}
			return writeDiff(cmd.OutOrStdout(), output, hosts)
		},
	}
	cmd.Flags().StringVar(&against, "against", "live", "what to plan against: live, status, or ref:REV")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringArrayVar(&sourceFlags, "source", nil, "read source NAME from folder DIR (NAME=DIR, repeatable)")
	return cmd
}

// writeDiff prints the hosts' plans as text or JSON and returns the exit
// status they make (as terraform plan -detailed-exitcode).
func writeDiff(out io.Writer, output string, hosts []hostPlan) error {
	if output == "json" {
		if err := writeJSON(out, diffReport{Hosts: hosts}); err != nil {
			return err
		}
	} else {
		color := isTerminal(out)
		for i, hp := range hosts {
			if len(hosts) > 1 {
				if i > 0 {
					fmt.Fprintln(out)
				}
				host := hp.Host
				if host == "" {
					host = "?"
				}
				fprintText(out, "== host %s (%s) ==\n", host, hp.Config)
			}
			hp.writeText(out, color)
		}
	}
	code := 0
	for _, hp := range hosts {
		switch {
		case len(hp.Errors) > 0 || hp.Summary.Rejected > 0:
			code = 1
		case hostplan.Plan(hp).Changed() && code == 0:
			code = 2
		}
	}
	if code != 0 {
		return &exitError{code: code, silent: true}
	}
	return nil
}

// diffReport is the JSON output of diff (docs/diff.md documents it).
type diffReport struct {
	Hosts []hostPlan `json:"hosts"`
}

// hostPlan is a host's plan as diff prints it.
type hostPlan hostplan.Plan

// statusTimeout bounds reading a host's status (its API or etcd): an
// unresponsive host must not hang CI.
var statusTimeout = 15 * time.Second

// hostStatus reads what the host of cfg last reported (--against status):
// from etcd when it has etcd.endpoints, else from its API.
func hostStatus(ctx context.Context, cfg *config.Config) (api.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	var (
		v   statusView
		err error
	)
	if len(cfg.Etcd.Endpoints) > 0 {
		v, err = statusFromEtcd(ctx, cfg, cfg.Hostname)
	} else {
		v, err = statusFromAPI(ctx, cfg, cfg.Hostname)
	}
	return v.Doc, err
}

// writeText prints the plan as DESIGN.md shows it. What it shows comes
// from sources, the engine and hosts' reports: each line goes through
// terminalText before its colour is put on.
func (hp hostPlan) writeText(w io.Writer, color bool) {
	paint := painter(color)
	for _, e := range hp.Errors {
		fmt.Fprintln(w, paint("31", "error: "+e))
	}
	if !hp.Planned {
		return
	}
	for _, p := range hp.Pods {
		writePodText(w, p, paint)
	}
	for _, r := range hp.Rejected {
		origin := manifest.Origin{Source: r.Source, File: r.File}
		line := fmt.Sprintf("%s: rejected %s: %s", origin, r.ID, strings.Join(stripOrigin(r.Reasons), "; "))
		if r.Running {
			line += " (the running version stays)"
		}
		fmt.Fprintln(w, paint("31", line))
	}
	writeSummaryText(w, hp.Summary)
}

// painter returns how text output paints a line: through terminalText,
// then in ANSI colour code when color.
func painter(color bool) func(code, s string) string {
	return func(code, s string) string {
		s = terminalText(s)
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
}

// writePodText prints a pod of the plan: a line for the pod, then one
// for each container it changes.
func writePodText(w io.Writer, p hostplan.PodPlan, paint func(code, s string) string) {
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
		fprintText(w, "pod %s (%s)\n", p.ID, src)
	}
	shown := func(c hostplan.Change) bool { return c.Container != hruntime.InfraName && c.Action != "none" }
	width := 0
	for _, c := range p.Changes {
		if shown(c) {
			width = max(width, len(c.Container))
		}
	}
	for _, c := range p.Changes {
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

// writeSummaryText prints the plan's summary line.
func writeSummaryText(w io.Writer, s hostplan.Summary) {
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

func shortRev(rev string) string {
	if len(rev) == 40 && !strings.Contains(rev, ":") {
		return rev[:7]
	}
	return rev
}

func isTerminal(w io.Writer) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
