// Package imagescmd is `hostlet images`: check and update, run by the
// hostlet-images helper so that the registry client (go-containerregistry,
// the Docker CLI's config and credential helpers) stays out of the agent's
// binary and memory.
package imagescmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/imageupdate"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/internal/textout"
	"github.com/hostlet/hostlet/registry"
)

// NewCommand is `hostlet images` and its subcommands. Its RunE errors
// are *ExitError when the exit status is not 1.
func NewCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:           "hostlet images",
		SilenceUsage:  true,
		SilenceErrors: true,
		Short:         "Image updates by policy: check the registries, edit the sources",
		Long: `Images with a policy (imagePolicy on a native container, x-hostlet-image-policy on a
Compose service) move to the newest tag the policy allows. Registries are read with
the Docker config's credentials ($DOCKER_CONFIG), one tag listing per repository per run.
Hosts never run this: CI does, or the machine that publishes (docs/image-updates.md).`,
	}
	cmd.AddCommand(newImagesCheckCommand(), newImagesUpdateCommand())
	return cmd
}

// imagesFlags are what check and update share.
type imagesFlags struct {
	sources           []string
	output            string
	maxTags           int
	statusURLs        []string
	includeRolledBack bool
	configs           []string
	timeout           time.Duration
}

func (f *imagesFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.sources, "source", nil, "read source NAME from folder DIR (NAME=DIR, repeatable; required)")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	cmd.Flags().IntVar(&f.maxTags, "max-tags", registry.DefaultMaxTags, "read at most this many tags of a repository")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Minute, "give up reading registries and hosts after this long")
	cmd.Flags().StringArrayVar(&f.statusURLs, "status-url", nil, "a host's API (http://HOST:PORT, repeatable): tags it rolled back and pods held there are skipped")
	cmd.Flags().BoolVar(&f.includeRolledBack, "include-rolled-back", false, "choose tags a host rolled back all the same (holds still count)")
	cmd.Flags().StringArrayVar(&f.configs, "config", nil, "a host's config (repeatable): its rollbacks and holds are read from its etcd status when it has etcd.endpoints, and update edits nothing unless each host's sources, read from --source folders, still validate")
}

func newImagesCheckCommand() *cobra.Command {
	var f imagesFlags
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Show, for every image with a policy, its tag and the newest one allowed",
		Long: `For every image with a policy in the given sources: the tag it has, the newest tag its
policy allows, and why newer tags were passed over. Nothing is changed.

Exit status: 0 nothing due, 2 updates due, 1 errors (after the report is printed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			run, err := decideImages(cmd.Context(), f)
			if err != nil {
				return err
			}
			return run.report(cmd.OutOrStdout(), f.output)
		},
	}
	f.add(cmd)
	return cmd
}

func newImagesUpdateCommand() *cobra.Command {
	var f imagesFlags
	var commit bool
	var co imageupdate.CommitOptions
	cmd := &cobra.Command{
		Use:   "update",
		Short: "Move every image with a policy to the newest tag allowed, editing the sources in place",
		Long: `As check, then edit the files of the sources in place: only the tags (or the .env
lines of the variables holding them) change; comments, quoting, key order, tag
precision and suffixes stay as written.

Exit status: 0 nothing due, 2 files edited, 1 errors (nothing is edited then).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := co.Check(); err != nil {
				return err
			}
			run, err := decideImages(cmd.Context(), f)
			if err != nil {
				return err
			}
			if !run.failed() {
				co.Push = commit
				if err := run.apply(cmd.Context(), f.configs, commit, co); err != nil {
					return err
				}
			}
			return run.report(cmd.OutOrStdout(), f.output)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&commit, "commit", false, "commit the edits (one commit per repository listing every move) and push them")
	cmd.Flags().StringVar(&co.Branch, "branch", "", "push to this branch (default: the one checked out)")
	cmd.Flags().BoolVar(&co.ReplaceBranch, "replace-branch", false, "--branch is the updater's own (a pull request's head, made anew each run): replace it, with a lease on what the remote has")
	cmd.Flags().StringVar(&co.SignKey, "sign-key", "", "sign the commit with this armored OpenPGP private key (no passphrase)")
	cmd.Flags().StringVar(&co.Message, "message-template", "", "the commit message, a Go text/template over .Updates")
	return cmd
}

// apply edits every source's files, checks that every host given still
// validates (else puts the files back and fails), then, with commit,
// commits and pushes them, source by source.
func (r *imagesRun) apply(ctx context.Context, configs []string, commit bool, co imageupdate.CommitOptions) error {
	edited := map[string]map[string][]byte{}
	originals := map[string]map[string][]byte{}
	for _, name := range slices.Sorted(maps.Keys(r.dirs)) {
		files, err := imageupdate.Edits(r.dirs[name], r.bySource[name])
		if err != nil {
			return fmt.Errorf("source %s: nothing updated: %w", name, err)
		}
		if len(files) == 0 {
			continue
		}
		if commit {
			if err := imageupdate.Prepare(r.dirs[name], r.bySource[name], co); err != nil {
				return fmt.Errorf("source %s: nothing updated: %w", name, err)
			}
		}
		if originals[name], err = imageupdate.Read(r.dirs[name], slices.Collect(maps.Keys(files))); err != nil {
			return fmt.Errorf("source %s: nothing updated: %w", name, err)
		}
		edited[name] = files
		r.diff += imageupdate.Diff(name, originals[name], files)
	}
	for _, name := range slices.Sorted(maps.Keys(edited)) {
		if err := imageupdate.Write(r.dirs[name], edited[name]); err != nil {
			return putBack(r.dirs, originals, fmt.Errorf("source %s: nothing updated: %w", name, err))
		}
	}
	if err := validateHosts(ctx, configs, r.dirs); err != nil {
		return putBack(r.dirs, originals, fmt.Errorf("nothing updated: %w", err))
	}
	if !commit {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(edited)) {
		hash, err := imageupdate.Commit(ctx, r.dirs[name], slices.Collect(maps.Keys(edited[name])), r.bySource[name], co)
		if err != nil {
			return fmt.Errorf("source %s: %w", name, err)
		}
		r.commits = append(r.commits, name+" "+hash)
	}
	return nil
}

// putBack writes every source's original files back and returns err,
// with any failure to put one back.
func putBack(dirs map[string]string, originals map[string]map[string][]byte, err error) error {
	for _, name := range slices.Sorted(maps.Keys(originals)) {
		if werr := imageupdate.Write(dirs[name], originals[name]); werr != nil {
			err = fmt.Errorf("%w; and putting source %s's files back failed: %v", err, name, werr)
		}
	}
	return err
}

// imagesRun is what one run of check or update decided.
type imagesRun struct {
	dirs     map[string]string
	bySource map[string][]imageupdate.Update
	updates  []imageupdate.Update
	problems []imageupdate.Problem
	veto     imageupdate.Veto
	// commits are "source hash" of the commits made.
	commits []string
	// diff is the edited lines, as a unified diff without context.
	diff string
}

func decideImages(ctx context.Context, f imagesFlags) (*imagesRun, error) {
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	if err := checkOutputFormat(f.output); err != nil {
		return nil, err
	}
	dirs, err := hostplan.ParseSourceFlags(f.sources)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("--source NAME=DIR: give at least one source")
	}
	reg, err := registry.New(registry.Options{MaxTags: f.maxTags})
	if err != nil {
		return nil, err
	}
	states, err := hostStates(ctx, f.statusURLs, f.configs)
	if err != nil {
		return nil, err
	}
	veto := imageupdate.VetoFrom(states, f.includeRolledBack)
	run := &imagesRun{dirs: dirs, bySource: map[string][]imageupdate.Update{}, veto: veto}
	for _, name := range slices.Sorted(maps.Keys(dirs)) {
		targets, problems, err := imageupdate.Scan(name, dirs[name])
		if err != nil {
			return nil, err
		}
		for i := range problems {
			problems[i].File = name + ":" + problems[i].File
		}
		run.problems = append(run.problems, problems...)
		us := imageupdate.Decide(ctx, reg, targets, veto)
		run.bySource[name] = us
		run.updates = append(run.updates, us...)
	}
	return run, nil
}

func (r *imagesRun) failed() bool {
	return len(r.problems) > 0 || slices.ContainsFunc(r.updates, func(u imageupdate.Update) bool { return u.Err != "" })
}

// imagesReport is the JSON output of images check and update.
type imagesReport struct {
	Images   []imageupdate.Update  `json:"images"`
	Problems []imageupdate.Problem `json:"problems"`
	Commits  []string              `json:"commits,omitempty"`
	// Diff is what update changed, line by line.
	Diff string `json:"diff,omitempty"`
}

// report prints the run and returns its exit status.
func (r *imagesRun) report(out io.Writer, output string) error {
	if output == "json" {
		if err := writeJSON(out, imagesReport{Images: r.updates, Problems: append([]imageupdate.Problem{}, r.problems...), Commits: r.commits, Diff: r.diff}); err != nil {
			return err
		}
	} else {
		writeImagesText(out, r)
	}
	switch {
	case r.failed():
		return &ExitError{Code: 1}
	case slices.ContainsFunc(r.updates, imageupdate.Update.Due):
		return &ExitError{Code: 2}
	}
	return nil
}

func writeImagesText(out io.Writer, r *imagesRun) {
	for _, u := range r.updates {
		t := u.Target
		head := fmt.Sprintf("%s:%s %s/%s %s", t.Source, t.File, t.Pod, t.Container, u.Repository)
		switch {
		case u.Err != "":
			fmt.Fprintf(out, "%s: error: %s\n", textout.Text(head), textout.Text(u.Err))
		case u.To != "":
			to := u.To
			if u.Digest != "" {
				to += "@" + u.Digest
			}
			fmt.Fprintf(out, "%s: %s -> %s\n", textout.Text(head), textout.Text(u.From), textout.Text(to))
		default:
			fmt.Fprintf(out, "%s: %s, nothing newer allowed\n", textout.Text(head), textout.Text(u.From))
		}
		if why := imageupdate.CurrentVetoed(u, r.veto); why != "" {
			fmt.Fprintf(out, "    the current %s: %s\n", textout.Text(u.From), textout.Text(why))
		}
		for _, s := range u.Skipped {
			fmt.Fprintf(out, "    skipped %s: %s\n", textout.Text(s.Tag), textout.Text(s.Reason))
		}
		if u.SkippedMore > 0 {
			fmt.Fprintf(out, "    and %d more tags skipped\n", u.SkippedMore)
		}
		if u.Capped {
			fmt.Fprintf(out, "    the repository has more tags than --max-tags: only the first were read\n")
		}
	}
	for _, p := range r.problems {
		fmt.Fprintf(out, "error: %s\n", textout.Text(p.Error()))
	}
	if len(r.updates) == 0 && len(r.problems) == 0 {
		fmt.Fprintln(out, "no image has a policy")
	}
	for _, line := range strings.SplitAfter(r.diff, "\n") {
		if line != "" {
			fmt.Fprintln(out, textout.Text(strings.TrimSuffix(line, "\n")))
		}
	}
	for _, c := range r.commits {
		fmt.Fprintf(out, "committed and pushed: %s\n", c)
	}
}

// Run runs `hostlet images ARGS` with its output to stdout and stderr
// and returns its exit status (its error printed, escapes kept off the
// terminal).
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := NewCommand()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	err := cmd.ExecuteContext(ctx)
	var ee *ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	fmt.Fprintln(stderr, "hostlet images:", textout.Text(err.Error()))
	return 1
}

// ExitError is an exit status other than 1 or a failure already
// reported.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

func checkOutputFormat(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("-o %q: want text or json", o)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
