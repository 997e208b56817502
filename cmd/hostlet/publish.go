package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/internal/release"
	"github.com/hostlet/hostlet/internal/textout"
)

// publishOptions are the flags of hostlet publish.
type publishOptions struct {
	configs     []string
	overrides   map[string]string
	ref         string
	endpoints   []string
	prefix      string
	waves       []fleet.Wave
	waveTimeout time.Duration
	dryRun      bool
	output      string
	// resume goes on with the halted (or interrupted) release of ref.
	resume bool
	// abort names a release to take back: the release before it is
	// published again.
	abort string
	// maxUnavailable splits a wave into batches written and waited for
	// in turn.
	maxUnavailable release.MaxUnavailable
}

// publishFlags are the flags of hostlet publish as given, before
// publishOptions are made of them.
type publishFlags struct {
	sources    []string
	waves      []string
	resume     string
	abort      string
	maxUnavail string
}

const publishHelp = `Publish git revision --ref to a fleet through etcd.

For every host config given (--config, once per host), each git source with
"via: etcd" is read from its checkout (--source NAME=DIR) at --ref, exactly as
"hostlet diff --against ref:REV" reads it (paths with {{.Hostname}}, Compose
projects, files and build contexts), and the host's set of those sources is
validated. If any host's set is invalid, every error is printed (host and
source:file) and nothing is written (exit 1).

Each host's set is written to <etcd.prefix>/desired/<hostname>/<source> (a key
that already holds this commit's set is not written again) and a release
record to <etcd.prefix>/releases/<commit>. Publishing the same commit again
writes nothing ("0 hosts changed").

--wave 'NAME: SELECTOR' (repeatable, in order) splits the hosts by their
labels: a host is in the first wave that picks it; a host no wave picks is an
error. Each wave is one etcd transaction (several when it holds more than
etcd's max-txn-ops or 1 MiB); then publish waits until every changed host of
it reports the commit on its via: etcd sources and its pods' rollouts
Complete. A host that rolls back or fails a pod of the release, or does not
report within --wave-timeout, halts the release: exit 1, later waves not
written, the release record says why. Without --wave, every host is one wave.

--max-unavailable N|P% writes a wave N hosts (P% of its hosts, at least 1) at a
time, one transaction each, and waits for each batch before the next.

--etcd-endpoints and --etcd-prefix default to the first config's etcd block.
--dry-run prints the plan (waves, which hosts would change) and writes nothing.

A halted release is not published again as it is. --resume REV goes on with
it after a fix on its hosts, in the waves its record holds: the halted wave's
hosts are waited for again (and written if their key changed meanwhile), then
the later waves go as before. --abort REV takes a halted release back instead:
the last complete release before it is published again (the hosts REV reached
are written and waited for; the others still hold it) and REV's record is
marked Aborted.

Exit status: 0 published (or nothing to change), 1 invalid sets, errors or a
halted release.`

func newPublishCommand(g *globalFlags) *cobra.Command {
	var (
		o publishOptions
		f publishFlags
	)
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Render every host's via: etcd git sources at a commit and publish them to etcd, in waves",
		Long:  publishHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolve(g, &o); err != nil {
				return err
			}
			if o.abort != "" {
				return abortRelease(cmd.Context(), cmd.OutOrStdout(), o)
			}
			return publish(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringArrayVar(&f.sources, "source", nil, "read git source NAME from the checkout DIR (NAME=DIR, repeatable; every via: etcd source needs one)")
	cmd.Flags().StringVar(&o.ref, "ref", "", "git revision to publish (branch, tag or commit), resolved in the --source checkouts")
	cmd.Flags().StringSliceVar(&o.endpoints, "etcd-endpoints", nil, "etcd endpoints (default: the first config's etcd.endpoints)")
	cmd.Flags().StringVar(&o.prefix, "etcd-prefix", "", "etcd key prefix (default: the first config's etcd.prefix)")
	cmd.Flags().StringArrayVar(&f.waves, "wave", nil, "a wave, 'NAME: SELECTOR' (k=v[,k=v] or *), repeatable, in order")
	cmd.Flags().DurationVar(&o.waveTimeout, "wave-timeout", 10*time.Minute, "how long a wave's hosts have to report the release")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan; write nothing")
	cmd.Flags().StringVar(&f.maxUnavail, "max-unavailable", "", "write a wave N hosts (or P% of its hosts) at a time, each batch waited for before the next (default: the whole wave at once)")
	cmd.Flags().StringVar(&f.abort, "abort", "", "take back the halted release REV (a commit SHA, or its start): publish the last complete release before it again")
	cmd.Flags().StringVar(&f.resume, "resume", "", "go on with the halted release of revision REV (after a fix on its hosts), in its record's waves")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// resolve checks the flags and fills o from them (o holds those bound to
// it already).
func (f *publishFlags) resolve(g *globalFlags, o *publishOptions) error {
	if err := checkOutputFormat(o.output); err != nil {
		return err
	}
	var err error
	if o.overrides, err = hostplan.ParseSourceFlags(f.sources); err != nil {
		return err
	}
	if o.maxUnavailable, err = release.ParseMaxUnavailable(f.maxUnavail); err != nil {
		return err
	}
	if f.abort != "" {
		if o.ref != "" || f.resume != "" || len(f.waves) > 0 {
			return errors.New("--abort REV takes no --ref, --resume or --wave: it publishes the release before REV")
		}
		o.abort, o.configs = f.abort, g.configFiles
		if len(o.configs) == 0 {
			return errors.New("--config is required: one per host to publish to")
		}
		return nil
	}
	return f.resolveRelease(g, o)
}

// resolveRelease checks the flags of a publish (not an abort).
func (f *publishFlags) resolveRelease(g *globalFlags, o *publishOptions) error {
	if f.resume != "" {
		if o.ref != "" && o.ref != f.resume {
			return fmt.Errorf("--resume %s and --ref %s: give one revision", f.resume, o.ref)
		}
		if len(f.waves) > 0 {
			return errors.New("--resume takes the waves of the release record: do not give --wave")
		}
		o.ref, o.resume = f.resume, true
	}
	if o.ref == "" {
		return errors.New("--ref is required: the git revision to publish")
	}
	if len(g.configFiles) == 0 {
		return errors.New("--config is required: one per host to publish to")
	}
	if o.waveTimeout <= 0 {
		return fmt.Errorf("--wave-timeout %s: want a positive duration", o.waveTimeout)
	}
	for _, w := range f.waves {
		wave, err := fleet.ParseWave(w)
		if err != nil {
			return fmt.Errorf("--wave: %w", err)
		}
		o.waves = append(o.waves, wave)
	}
	o.configs = g.configFiles
	return nil
}

// publishOut prints publish's progress (text) or its summary (JSON).
type publishOut struct {
	w    io.Writer
	json bool
}

func newPublishOut(w io.Writer, o publishOptions) *publishOut {
	if o.output != "json" {
		w = textout.TerminalSafe(w)
	}
	return &publishOut{w: w, json: o.output == "json"}
}

// printf prints a line of text output (not with -o json): its arguments,
// hosts' names, errors and a release's reasons from etcd, through
// textout.Fprintf.
func (p *publishOut) printf(format string, args ...any) {
	if !p.json {
		textout.Fprintf(p.w, format, args...)
	}
}

// invalid prints every error of an invalid set and returns exit 1.
func (p *publishOut) invalid(rep *release.Report) error {
	for _, e := range rep.Errors {
		p.printf("%s\n", e)
	}
	p.printf("INVALID: %s; nothing published.\n", release.Plural(len(rep.Errors), "error"))
	return p.done(rep, &exitError{code: 1, silent: true})
}

// done prints the summary of rep and returns err.
func (p *publishOut) done(rep *release.Report, err error) error {
	if p.json {
		if werr := writeJSON(p.w, rep); werr != nil {
			return werr
		}
	} else {
		n := len(rep.Release.HostsChanged)
		switch {
		case rep.DryRun:
			p.printf("Dry run: %s would change; nothing written.\n", release.Plural(n, "host"))
		case len(rep.Errors) == 0 && err == nil:
			p.printf("%s changed.\n", release.Plural(n, "host"))
		}
	}
	return err
}

// publishEtcd returns the etcd endpoints and prefix of a publish: the
// flags', else first's etcd block.
func publishEtcd(o publishOptions, first *config.Config) ([]string, string, error) {
	endpoints, prefix := o.endpoints, o.prefix
	if len(endpoints) == 0 {
		endpoints = first.Etcd.Endpoints
	}
	if prefix == "" {
		prefix = first.Etcd.Prefix
	}
	if len(endpoints) == 0 {
		return nil, "", fmt.Errorf("no --etcd-endpoints and %s has no etcd.endpoints", hostplan.ConfigName(first))
	}
	return endpoints, prefix, nil
}

// dialPublisher returns the release publisher of o's etcd (first's by
// default), printing its progress with printf (nil: none), and how to
// close it.
func dialPublisher(o publishOptions, first *config.Config, printf release.Printf) (*release.Publisher, func(), error) {
	endpoints, prefix, err := publishEtcd(o, first)
	if err != nil {
		return nil, nil, err
	}
	cli, etcdErr, err := dialFleetEtcd(endpoints)
	if err != nil {
		return nil, nil, err
	}
	pub := &release.Publisher{Etcd: cli, Prefix: prefix, Clock: clock.Real{}, Printf: printf, EtcdError: etcdErr}
	return pub, func() { cli.Close() }, nil
}

// publish renders and validates every host's set first (nothing is
// written unless every host's set is valid), puts the hosts in waves,
// then publishes them.
func publish(ctx context.Context, w io.Writer, o publishOptions) error {
	out := newPublishOut(w, o)
	set, err := release.Render(ctx, release.Input{Configs: o.configs, Ref: o.ref, Overrides: o.overrides}, out.printf)
	if err != nil {
		return err
	}
	if len(set.Errors) > 0 {
		return out.invalid(set.Report(o.dryRun))
	}
	if !o.resume {
		// Waves, before anything is read from or written to etcd.
		if err := set.Assign(o.waves); err != nil {
			return err
		}
	}
	pub, closeEtcd, err := dialPublisher(o, set.First, out.printf)
	if err != nil {
		return err
	}
	defer closeEtcd()
	rep, err := pub.Publish(ctx, set, release.Options{Waves: o.waves, WaveTimeout: o.waveTimeout, DryRun: o.dryRun, Resume: o.resume, MaxUnavailable: o.maxUnavailable})
	if rep == nil {
		return err
	}
	return out.done(rep, err)
}

// abortRelease takes back release o.abort: it finds its record and the
// last complete release before it, publishes that one again (in one
// wave: the hosts o.abort reached change, the others hold it still), and
// marks o.abort's record Aborted.
func abortRelease(ctx context.Context, w io.Writer, o publishOptions) error {
	first, err := config.Load(o.configs[0])
	if err != nil {
		return err
	}
	pub, closeEtcd, err := dialPublisher(o, first, nil)
	if err != nil {
		return err
	}
	defer closeEtcd()
	a, err := pub.FindAbort(ctx, o.abort)
	if err != nil {
		return err
	}
	if o.output != "json" {
		fmt.Fprintf(w, "aborting release %s: publishing %s again\n", release.ShortRev(a.Cur.Rev), release.ShortRev(a.Prev.Rev))
	}
	o.ref = a.Prev.Rev
	if err := publish(ctx, w, o); err != nil || o.dryRun {
		return err
	}
	if err := pub.MarkAborted(ctx, a); err != nil {
		return err
	}
	if o.output != "json" {
		fmt.Fprintf(w, "release %s aborted.\n", release.ShortRev(a.Cur.Rev))
	}
	return nil
}
