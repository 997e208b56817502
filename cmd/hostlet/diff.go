package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	hruntime "github.com/hostlet/hostlet/runtime"
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

Exit status: 0 no changes, 2 changes, 1 errors or invalid/rejected manifests (after the
plan is printed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			overrides, err := parseSourceFlags(sourceFlags)
			if err != nil {
				return err
			}
			files := g.configFiles
			if len(files) == 0 {
				files = []string{""}
			}
			var hosts []hostPlan
			for _, f := range files {
				hp := diffHost(cmd.Context(), f, against, overrides)
				hosts = append(hosts, hp)
			}
			out := cmd.OutOrStdout()
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
						fmt.Fprintf(out, "== host %s (%s) ==\n", hp.Host, hp.Config)
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
		},
	}
	cmd.Flags().StringVar(&against, "against", "live", "what to plan against: live, status, or ref:REV")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringArrayVar(&sourceFlags, "source", nil, "read source NAME from folder DIR (NAME=DIR, repeatable)")
	return cmd
}

// diffReport is the JSON output of diff (docs/diff.md documents it).
type diffReport struct {
	Hosts []hostPlan `json:"hosts"`
}

type hostPlan struct {
	Host     string         `json:"host"`
	Config   string         `json:"config"`
	Against  string         `json:"against"`
	Pods     []podPlanJSON  `json:"pods"`
	Rejected []rejectedJSON `json:"rejected"`
	Summary  summaryJSON    `json:"summary"`
	Errors   []string       `json:"errors"`
	changed  bool
}

type podPlanJSON struct {
	ID       string         `json:"id"`
	Source   string         `json:"source"`
	Revision string         `json:"revision,omitempty"`
	Action   string         `json:"action"`
	Changes  []hsync.Change `json:"changes"`
}

type rejectedJSON struct {
	ID      string   `json:"id"`
	Source  string   `json:"source"`
	Reasons []string `json:"reasons"`
}

type summaryJSON struct {
	Create    int `json:"create"`
	Recreate  int `json:"recreate"`
	Restart   int `json:"restart"`
	Remove    int `json:"remove"`
	Unchanged int `json:"unchanged"`
	Rejected  int `json:"rejected"`
}

// diffHost computes one host's plan; errors are recorded in the plan.
func diffHost(ctx context.Context, file, against string, overrides map[string]string) hostPlan {
	hp := hostPlan{Config: file, Against: against, Pods: []podPlanJSON{}, Rejected: []rejectedJSON{}, Errors: []string{}}
	fail := func(err error) hostPlan {
		hp.Errors = append(hp.Errors, err.Error())
		return hp
	}
	cfg, err := config.Load(file)
	if err != nil {
		return fail(err)
	}
	hp.Host, hp.Config = cfg.Hostname, cfg.File
	for name := range overrides {
		if !hasSource(cfg, name) {
			return fail(fmt.Errorf("--source %s: no source named %q in %s", name, name, configName(cfg)))
		}
	}
	vopts := validate.Options{HostPathAllow: cfg.HostPathAllow}

	// The desired side: every source as it is now.
	reads, err := readConfiguredSources(ctx, cfg, overrides)
	if err != nil {
		return fail(err)
	}
	desired, res, readErrs := desiredFrom(reads, vopts)
	hp.Errors = append(hp.Errors, readErrs...)
	for _, rj := range res.Rejected {
		hp.Rejected = append(hp.Rejected, rejectedJSON{ID: rj.ID, Source: rj.Source, Reasons: rj.Reasons})
	}

	// The other side.
	var actual []hruntime.Container
	switch {
	case against == "live":
		actual, err = liveContainers(ctx, cfg)
	case against == "status":
		actual, err = statusContainers(ctx, cfg)
	case strings.HasPrefix(against, "ref:"):
		actual, err = refContainers(cfg, strings.TrimPrefix(against, "ref:"), reads, overrides, vopts)
	default:
		err = fmt.Errorf("--against %q: want live, status or ref:REV", against)
	}
	if err != nil {
		return fail(err)
	}
	// Nothing is pruned while a source could not be read (as in run).
	plan := hsync.MakePlan(desired, actual, hsync.PlanOptions{Prune: cfg.Sync.Prune && len(readErrs) == 0})
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
		hp.Pods = append(hp.Pods, podPlanJSON{ID: pp.ID, Source: pp.Source, Revision: pp.Revision, Action: action, Changes: pp.Changes})
	}
	c := plan.Counts()
	hp.Summary = summaryJSON{Create: c.Create, Recreate: c.Recreate, Restart: c.Restart, Remove: c.Remove, Unchanged: c.Unchanged, Rejected: len(hp.Rejected)}
	hp.changed = plan.Changed()
	return hp
}

func hasSource(cfg *config.Config, name string) bool {
	for _, s := range cfg.Sources {
		if s.Name == name {
			return true
		}
	}
	return false
}

// desiredFrom validates what the sources read and returns the pods to run.
func desiredFrom(reads []sourceRead, vopts validate.Options) ([]hsync.Pod, validate.Result, []string) {
	var (
		set  []validate.Source
		errs []string
		revs = map[string]string{}
	)
	for _, r := range reads {
		if r.Err != nil {
			errs = append(errs, fmt.Sprintf("source %s: %v", r.Name, r.Err))
		}
		revs[r.Name] = r.Revision
		set = append(set, validate.Source{Name: r.Name, Manifests: r.Manifests})
	}
	res := validate.Set(set, vopts)
	var pods []hsync.Pod
	for _, a := range res.Accepted {
		pods = append(pods, hsync.NewPod(a.Manifest, a.Origin.Source, revs[a.Origin.Source]))
	}
	return pods, res, errs
}

func liveContainers(ctx context.Context, cfg *config.Config) ([]hruntime.Container, error) {
	rt, err := hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.List(ctx)
}

func statusContainers(ctx context.Context, cfg *config.Config) ([]hruntime.Container, error) {
	var (
		v   statusView
		err error
	)
	if len(cfg.Etcd.Endpoints) > 0 {
		v, err = statusFromEtcd(ctx, cfg, cfg.Hostname)
	} else {
		v, err = statusFromAPI(ctx, cfg, cfg.Hostname)
	}
	if err != nil {
		return nil, err
	}
	return hsync.FromStatus(cfg.Instance, v.Doc.Pods), nil
}

// refContainers simulates the containers the sources would have made at
// git revision rev: git sources read from their checkout at rev, other
// sources as they are now.
func refContainers(cfg *config.Config, rev string, current []sourceRead, overrides map[string]string, vopts validate.Options) ([]hruntime.Container, error) {
	var reads []sourceRead
	for _, s := range cfg.Sources {
		if s.Type != config.TypeGit {
			continue
		}
		if overrides[s.Name] == "" {
			return nil, fmt.Errorf("--against ref:%s: git source %s needs --source %s=DIR (a checkout of %s)", rev, s.Name, s.Name, s.URL)
		}
	}
	for i, s := range cfg.Sources {
		if s.Type != config.TypeGit {
			reads = append(reads, current[i])
			continue
		}
		r, err := readGitAt(overrides[s.Name], rev, s)
		if err != nil {
			return nil, err
		}
		reads = append(reads, r)
	}
	pods, _, errs := desiredFrom(reads, vopts)
	if len(errs) > 0 {
		return nil, fmt.Errorf("at %s: %s", rev, strings.Join(errs, "; "))
	}
	return hsync.Simulate(cfg.Instance, pods), nil
}

// readGitAt reads a git source's paths from commit rev of the checkout dir.
func readGitAt(dir, rev string, s config.Source) (sourceRead, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return sourceRead{}, fmt.Errorf("--source %s=%s: not a git checkout, and --against ref: needs one", s.Name, dir)
	}
	if err != nil {
		return sourceRead{}, fmt.Errorf("--source %s=%s: %w", s.Name, dir, err)
	}
	hash, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return sourceRead{}, fmt.Errorf("--against ref:%s: not a revision of %s: %w", rev, dir, err)
	}
	commit, err := repo.CommitObject(*hash)
	if err != nil {
		return sourceRead{}, fmt.Errorf("--against ref:%s: %w", rev, err)
	}
	paths := append([]string(nil), s.AllPaths()...)
	if sub, err := checkoutSubdir(dir); err == nil && sub != "" {
		// DIR is a folder inside the checkout: paths are relative to it.
		for i := range paths {
			paths[i] = filepath.ToSlash(filepath.Join(sub, paths[i]))
		}
	}
	ms, files, err := gitsource.ReadCommit(commit, paths, s.Name)
	return sourceRead{Name: s.Name, Type: s.Type, Files: files, Revision: hash.String(), Manifests: ms, Err: err}, nil
}

// checkoutSubdir returns dir's path relative to the root of its checkout.
func checkoutSubdir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return filepath.Rel(d, abs)
		}
		if d == filepath.Dir(d) {
			return "", errors.New("not in a checkout")
		}
	}
}

// writeText prints the plan as DESIGN.md shows it.
func (hp hostPlan) writeText(w io.Writer, color bool) {
	paint := func(code, s string) string {
		if !color {
			return s
		}
		return "\x1b[" + code + "m" + s + "\x1b[0m"
	}
	for _, e := range hp.Errors {
		fmt.Fprintln(w, paint("31", "error: "+e))
	}
	for _, p := range hp.Pods {
		src := p.Source
		if p.Revision != "" && p.Action != "remove" {
			src += " @ " + shortRev(p.Revision)
		}
		switch p.Action {
		case "remove":
			fmt.Fprintln(w, paint("31", fmt.Sprintf("- pod %s (%s)", p.ID, src)))
			continue
		case "create":
			fmt.Fprintln(w, paint("32", fmt.Sprintf("+ pod %s (%s)", p.ID, src)))
		default:
			fmt.Fprintf(w, "pod %s (%s)\n", p.ID, src)
		}
		width := 0
		for _, c := range p.Changes {
			if c.Container != hruntime.InfraName && c.Action != hsync.ActionNone {
				width = max(width, len(c.Container))
			}
		}
		for _, c := range p.Changes {
			if c.Container == hruntime.InfraName || c.Action == hsync.ActionNone {
				continue
			}
			line := fmt.Sprintf("%-*s  %s", width, c.Container, c.Action)
			if len(c.Reasons) > 0 && c.Action != hsync.ActionCreate {
				line += ": " + strings.Join(c.Reasons, "; ")
			}
			switch c.Action {
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
		fmt.Fprintln(w, paint("31", fmt.Sprintf("rejected %s (%s): %s", r.ID, r.Source, strings.Join(stripOrigin(r.Reasons), "; "))))
	}
	s := hp.Summary
	restart := ""
	if s.Restart > 0 {
		restart = fmt.Sprintf(", %d to restart", s.Restart)
	}
	fmt.Fprintf(w, "Plan: %d to create, %d to recreate%s, %d to remove, %d unchanged, %d rejected.\n", s.Create, s.Recreate, restart, s.Remove, s.Unchanged, s.Rejected)
}

// stripOrigin drops the "source:file: pod "x": " prefix of a reason, which
// the "rejected ID (source)" line already says.
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
