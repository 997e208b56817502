package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	"github.com/hostlet/hostlet/sources/desired"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
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
			if _, _, err := parseAgainst(against); err != nil {
				return err
			}
			files := g.configFiles
			if len(files) == 0 {
				files = []string{""}
			}
			var hosts []hostPlan
			for _, f := range files {
				hp := diffHost(cmd.Context(), cmd.ErrOrStderr(), f, against, overrides)
				hosts = append(hosts, hp)
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
		case hp.changed && code == 0:
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

type hostPlan struct {
	Host    string `json:"host"`
	Config  string `json:"config"`
	Against string `json:"against"`
	// Planned is false when no plan could be computed (Errors say why);
	// Pods, Rejected and Summary are then empty.
	Planned  bool           `json:"planned"`
	Pods     []podPlanJSON  `json:"pods"`
	Rejected []rejectedJSON `json:"rejected"`
	Summary  summaryJSON    `json:"summary"`
	Errors   []string       `json:"errors"`
	changed  bool
}

type podPlanJSON struct {
	ID       string       `json:"id"`
	Source   string       `json:"source"`
	Revision string       `json:"revision,omitempty"`
	Action   string       `json:"action"`
	Changes  []changeJSON `json:"changes"`
	// HeldBack: the host rolled this desired version back; its last
	// ready version stays and the changes are not made (counted as held
	// back, not as changes).
	HeldBack *heldBackJSON `json:"heldBack,omitempty"`
	// Held: an operator holds the pod; the changes wait for its release
	// (counted as held, not as changes).
	Held *hsync.Hold `json:"held,omitempty"`
}

// heldBackJSON is the rollback that holds a pod's desired version back:
// the revision rolled back and why.
type heldBackJSON struct {
	Revision string `json:"revision"`
	Reason   string `json:"reason"`
}

// waits reports whether the pod's changes are not made: held back or held.
func (p podPlanJSON) waits() bool { return p.HeldBack != nil || p.Held != nil }

// changeJSON is one container slot of a pod's plan. Action "none" leaves
// the container as it is.
type changeJSON struct {
	Container string   `json:"container"`
	Action    string   `json:"action"`
	Reasons   []string `json:"reasons"`
	// Build is the image the change builds first (a container with a
	// build, created or recreated), "" for none. Whether the host has it
	// already is not known here: an image it built before is not built
	// again.
	Build string `json:"build,omitempty"`
}

type rejectedJSON struct {
	ID     string `json:"id"`
	Source string `json:"source"`
	// File is the manifest's file inside its source ("" for a source of
	// one document, such as an HTTP body).
	File    string   `json:"file"`
	Reasons []string `json:"reasons"`
	// Running: a previously applied version of the pod runs and stays (a
	// rejected manifest never takes a running pod down).
	Running bool `json:"running"`
}

type summaryJSON struct {
	Create    int `json:"create"`
	Recreate  int `json:"recreate"`
	Restart   int `json:"restart"`
	Remove    int `json:"remove"`
	Unchanged int `json:"unchanged"`
	Rejected  int `json:"rejected"`
	// HeldBack and Held count the app-container changes of pods held back
	// by a rollback or held by an operator: not made, not in the counts
	// above.
	HeldBack int `json:"heldBack"`
	Held     int `json:"held"`
}

// parseAgainst splits --against into its mode (live, status or ref) and,
// for ref:REV, the revision.
func parseAgainst(against string) (mode, rev string, err error) {
	switch {
	case against == "live", against == "status":
		return against, "", nil
	case strings.HasPrefix(against, "ref:") && strings.TrimPrefix(against, "ref:") != "":
		return "ref", strings.TrimPrefix(against, "ref:"), nil
	}
	return "", "", fmt.Errorf("--against %q: want live, status or ref:REV", against)
}

// diffHost computes one host's plan; errors are recorded in the plan,
// warnings written to stderr.
func diffHost(ctx context.Context, stderr io.Writer, file, against string, overrides map[string]string) hostPlan {
	hp := hostPlan{Config: file, Against: against, Pods: []podPlanJSON{}, Rejected: []rejectedJSON{}, Errors: []string{}}
	fail := func(err error) hostPlan {
		hp.Errors = append(hp.Errors, err.Error())
		hp.Pods, hp.Rejected, hp.Summary, hp.Planned, hp.changed = []podPlanJSON{}, []rejectedJSON{}, summaryJSON{}, false, false
		return hp
	}
	mode, rev, err := parseAgainst(against)
	if err != nil {
		return fail(err)
	}
	cfg, err := config.Load(file)
	if err != nil {
		return fail(err)
	}
	hp.Host, hp.Config = cfg.Hostname, cfg.File
	srcs, closeSources, err := openSources(cfg, overrides)
	if err != nil {
		return fail(err)
	}
	defer closeSources()
	if mode == "ref" {
		// Before anything is read: a git source without a checkout would
		// otherwise be fetched from its URL first.
		if err := checkReadableAt(ctx, srcs, rev, overrides); err != nil {
			return fail(err)
		}
	}
	vopts := configured.ValidateOptions(cfg)
	env := diffEnvHasher(cfg)

	// The desired side: every source as it is now.
	reads := readSources(ctx, srcs)
	hp.Errors = append(hp.Errors, readErrors(reads)...)

	// The other side, and what the host holds back or holds (nothing at
	// another revision).
	var (
		actual   []hruntime.Container
		rollouts map[string]hsync.Rollout
	)
	switch mode {
	case "live":
		actual, err = liveContainers(ctx, cfg)
		rollouts = savedRollouts(stderr, cfg)
	case "status":
		actual, rollouts, err = statusContainers(ctx, cfg)
	case "ref":
		actual, err = refContainers(ctx, cfg, rev, srcs, reads, vopts, env)
	}
	if err != nil {
		return fail(err)
	}

	m := mergeLikeRun(reads, actual, cfg.Sync.AllowEmpty, vopts)
	hp.Errors = append(hp.Errors, m.errors...)
	for _, rj := range m.rejected {
		hp.Rejected = append(hp.Rejected, rejectedJSON{ID: rj.ID, Source: rj.Source, File: rj.Origin.File, Reasons: rj.Reasons, Running: m.stay[rj.ID]})
	}
	// Pods that stay as they run are out of the plan, counted unchanged.
	kept := 0
	actual = slices.DeleteFunc(actual, func(c hruntime.Container) bool {
		if !m.stay[c.Pod()] {
			return false
		}
		if c.Slot() != hruntime.InfraName {
			kept++
		}
		return true
	})

	plan := hsync.MakePlan(m.pods, actual, hsync.PlanOptions{Prune: cfg.Sync.Prune, EnvHasher: env})
	hp.Pods = podPlans(plan, rollouts)
	hp.Summary = summarize(plan, hp.Pods)
	hp.Summary.Unchanged += kept
	hp.Summary.Rejected = len(hp.Rejected)
	hp.changed = slices.ContainsFunc(hp.Pods, func(p podPlanJSON) bool { return !p.waits() })
	hp.Planned = true
	return hp
}

// summarize counts the plan's app containers, the changes of pods that
// wait (pods, from podPlans) as held back or held instead of as changes.
func summarize(plan hsync.Plan, pods []podPlanJSON) summaryJSON {
	c := plan.Counts()
	s := summaryJSON{Create: c.Create, Recreate: c.Recreate, Restart: c.Restart, Remove: c.Remove, Unchanged: c.Unchanged}
	for _, p := range pods {
		if !p.waits() {
			continue
		}
		for _, ch := range p.Changes {
			if ch.Container == hruntime.InfraName || ch.Action == "none" {
				continue
			}
			switch hsync.Action(ch.Action) {
			case hsync.ActionCreate:
				s.Create--
			case hsync.ActionRecreate:
				s.Recreate--
			case hsync.ActionRestart:
				s.Restart--
			case hsync.ActionRemove:
				s.Remove--
			default:
				continue
			}
			if p.Held != nil {
				s.Held++
			} else {
				s.HeldBack++
			}
		}
	}
	return s
}

// savedRollouts reads the rollouts this host's hostlet saved under
// stateDir. No stateDir or file is none; one that cannot be read or
// decoded is none too, with a warning: its held and held back pods then
// show as changes.
func savedRollouts(stderr io.Writer, cfg *config.Config) map[string]hsync.Rollout {
	if cfg.StateDir == "" {
		return nil
	}
	r, err := hsync.ReadRollouts(cfg.StateDir)
	if err != nil {
		fmt.Fprintf(stderr, "hostlet: warning: host %s: %v; held and held back pods show as changes\n", cfg.Hostname, err)
		return nil
	}
	return r
}

// podPlans lists the pods the plan changes, as the output shows them;
// rollouts (by pod ID, nil for none) say which are held back or held.
func podPlans(plan hsync.Plan, rollouts map[string]hsync.Rollout) []podPlanJSON {
	out := []podPlanJSON{}
	for _, pp := range plan.Pods {
		if pp.Unchanged() {
			continue
		}
		action := "update"
		switch {
		case pp.Remove():
			action = "remove"
		case len(pp.Current) == 0:
			action = "create"
		}
		pj := podPlanJSON{ID: pp.ID, Source: pp.Source, Revision: pp.Revision, Action: action, Changes: []changeJSON{}}
		for _, c := range pp.Changes {
			a := string(c.Action)
			if c.Action == hsync.ActionNone {
				a = "none"
			}
			cj := changeJSON{Container: c.Container, Action: a, Reasons: append([]string{}, c.Reasons...)}
			if pp.Desired != nil && (c.Action == hsync.ActionCreate || c.Action == hsync.ActionRecreate) {
				for _, mc := range pp.Desired.Manifest.Containers {
					if mc.Name == c.Container && mc.Build != nil {
						cj.Build = mc.Image
					}
				}
			}
			pj.Changes = append(pj.Changes, cj)
		}
		if r, ok := rollouts[pp.ID]; ok {
			switch {
			case r.State == hsync.RolloutHeld:
				h := hsync.Hold{Reason: r.Reason, Since: r.Since}
				if r.Hold != nil {
					h = *r.Hold
				}
				pj.Held = &h
			case r.State == hsync.RolloutRolledBack && pp.Desired != nil && r.Hash == manifest.PodHash(pp.Desired.Manifest):
				pj.HeldBack = &heldBackJSON{Revision: r.Revision, Reason: r.Reason}
			}
		}
		out = append(out, pj)
	}
	return out
}

// diffEnvHasher is the hasher diff compares env values with: the host's
// key when diff runs on the host and may read it (stateDir/env-hash.key,
// never created nor changed here), so that reasons say which env value
// changed; else a random key for this run, so that values recorded by the
// host (in labels or its status) compare with nothing and a reason never
// claims an env value changed without knowing it. Hashes never appear in
// diff's output either way.
func diffEnvHasher(cfg *config.Config) *hsync.EnvHasher {
	if h, err := hsync.ReadEnvHasher(cfg.StateDir); err == nil {
		return h
	}
	return hsync.RandomEnvHasher()
}

func hasSource(cfg *config.Config, name string) bool {
	for _, s := range cfg.Sources {
		if s.Name == name {
			return true
		}
	}
	return false
}

// desiredFrom computes the pods the sources read make (sources/desired,
// with nothing running). `--against ref:REV` simulates REV with it: a
// manifest rejected at REV counts as absent there.
func desiredFrom(reads []sourceRead, vopts validate.Options) []hsync.Pod {
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

// readErrors lists the errors of the sources that could not be read or
// decoded, one line per error; each names its source once.
func readErrors(reads []sourceRead) []string {
	var out []string
	for _, r := range reads {
		for _, e := range validate.Flatten(r.Err) {
			msg := e.Error()
			if e.Origin.Source == "" && !strings.HasPrefix(msg, "source "+r.Name+":") {
				msg = "source " + r.Name + ": " + msg
			}
			out = append(out, msg)
		}
	}
	return out
}

// merged is the desired side as the running hostlet would merge it.
type merged struct {
	// pods to run (pods that stay as they run are not among them).
	pods []hsync.Pod
	// rejected: every rejected manifest, in order.
	rejected []validate.Rejection
	// stay: IDs of pods that keep running as they are.
	stay map[string]bool
	// errors: why a source keeps its last good set, besides read errors.
	errors []string
}

// mergeLikeRun computes the desired side as the running hostlet would
// (sources/desired), with the pods that run now (actual) as every
// source's last good set: a source that failed to read, holds a manifest
// without an id, or reads as empty (without sync.allowEmpty) keeps what
// runs of it, and so does a push source (what was pushed to the host is
// not known here); a rejected manifest's running version stands in for
// it. Stand-ins and what runs stay as they run: the containers' labels
// carry enough to weigh them against other manifests, not to recreate
// them.
func mergeLikeRun(reads []sourceRead, actual []hruntime.Container, allowEmpty bool, vopts validate.Options) merged {
	m := merged{stay: map[string]bool{}}
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
				m.errors = append(m.errors, fmt.Sprintf("source %s: %s", r.Name, sources.ErrorText(err)))
			}
		}
		in.Sources = append(in.Sources, src)
	}
	res := desired.Compute(in)
	for _, e := range res.Accepted {
		if e.Kind != desired.Declared {
			m.stay[e.Manifest.ID] = true
			continue
		}
		m.pods = append(m.pods, hsync.NewPod(e.Manifest, e.Origin.Source, e.Revision))
	}
	m.rejected = res.Rejected
	return m
}

func liveContainers(ctx context.Context, cfg *config.Config) ([]hruntime.Container, error) {
	rt, err := hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.List(ctx)
}

// statusTimeout bounds reading a host's status (its API or etcd): an
// unresponsive host must not hang CI.
var statusTimeout = 15 * time.Second

// statusContainers returns the containers and the pods' rollouts the
// host last reported.
func statusContainers(ctx context.Context, cfg *config.Config) ([]hruntime.Container, map[string]hsync.Rollout, error) {
	var (
		v   statusView
		err error
	)
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	if len(cfg.Etcd.Endpoints) > 0 {
		v, err = statusFromEtcd(ctx, cfg, cfg.Hostname)
	} else {
		v, err = statusFromAPI(ctx, cfg, cfg.Hostname)
	}
	if err != nil {
		return nil, nil, err
	}
	rollouts := map[string]hsync.Rollout{}
	for _, p := range v.Doc.Pods {
		if p.Rollout != nil {
			rollouts[p.ID] = *p.Rollout
		}
	}
	return hsync.FromStatus(cfg.Instance, v.Doc.Pods), rollouts, nil
}

// readableAt is a source that can be read at another revision of its
// repository (a git source; gitsource.Checkout, given a checkout).
type readableAt interface {
	// ReadAt reads the source at rev; a *gitsource.CheckoutError when it
	// cannot be read there at all.
	ReadAt(ctx context.Context, rev string) (manifest.Snapshot, error)
}

// checkReadableAt fails when a source that is read at rev has no checkout
// (--source): a git source without one answers ReadAt at once, without
// fetching anything.
func checkReadableAt(ctx context.Context, srcs []sources.Source, rev string, overrides map[string]string) error {
	for _, s := range srcs {
		if ra, ok := s.(readableAt); ok && overrides[s.Name()] == "" {
			if _, err := ra.ReadAt(ctx, rev); err != nil {
				return err
			}
		}
	}
	return nil
}

// refContainers simulates the containers the sources would have made at
// git revision rev: git sources read from their checkout at rev, other
// sources as they are now (current).
func refContainers(ctx context.Context, cfg *config.Config, rev string, srcs []sources.Source, current []sourceRead, vopts validate.Options, env *hsync.EnvHasher) ([]hruntime.Container, error) {
	var reads, atRev []sourceRead
	for i, s := range srcs {
		ra, ok := s.(readableAt)
		if !ok {
			// Read errors of these are the desired side's, reported there.
			reads = append(reads, current[i])
			continue
		}
		snap, err := ra.ReadAt(ctx, rev)
		if ce := (*gitsource.CheckoutError)(nil); errors.As(err, &ce) {
			return nil, err
		}
		r := sourceRead{Snapshot: snap, Err: err}
		reads = append(reads, r)
		atRev = append(atRev, r)
	}
	if errs := readErrors(atRev); len(errs) > 0 {
		return nil, fmt.Errorf("at %s: %s", rev, strings.Join(errs, "; "))
	}
	pods := desiredFrom(reads, vopts)
	return hsync.Simulate(cfg.Instance, pods, env), nil
}

// writeText prints the plan as DESIGN.md shows it. What it shows comes
// from sources, the engine and hosts' reports: each line goes through
// terminalText before its colour is put on.
func (hp hostPlan) writeText(w io.Writer, color bool) {
	paint := func(code, s string) string {
		s = terminalText(s)
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	for _, e := range hp.Errors {
		fmt.Fprintln(w, paint("31", "error: "+e))
	}
	if !hp.Planned {
		return
	}
	for _, p := range hp.Pods {
		src := p.Source
		if p.Revision != "" && p.Action != "remove" {
			src += " @ " + shortRev(p.Revision)
		}
		switch {
		case p.HeldBack != nil:
			// What run --once would not do: nothing to list.
			fmt.Fprintln(w, paint("33", fmt.Sprintf("~ pod %s (%s): %s", p.ID, src, heldBackText(*p.HeldBack))))
			continue
		case p.Held != nil:
			fmt.Fprintln(w, paint("36", fmt.Sprintf("pod %s (%s): %s; waiting:", p.ID, src, heldText(*p.Held))))
		case p.Action == "remove":
			fmt.Fprintln(w, paint("31", fmt.Sprintf("- pod %s (%s)", p.ID, src)))
			continue
		case p.Action == "create":
			fmt.Fprintln(w, paint("32", fmt.Sprintf("+ pod %s (%s)", p.ID, src)))
		default:
			fprintText(w, "pod %s (%s)\n", p.ID, src)
		}
		shown := func(c changeJSON) bool { return c.Container != hruntime.InfraName && c.Action != "none" }
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
	for _, r := range hp.Rejected {
		origin := manifest.Origin{Source: r.Source, File: r.File}
		line := fmt.Sprintf("%s: rejected %s: %s", origin, r.ID, strings.Join(stripOrigin(r.Reasons), "; "))
		if r.Running {
			line += " (the running version stays)"
		}
		fmt.Fprintln(w, paint("31", line))
	}
	s := hp.Summary
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
func heldBackText(hb heldBackJSON) string {
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
