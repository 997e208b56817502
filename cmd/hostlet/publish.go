package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hostlet/hostlet/internal/clock"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	hsync "github.com/hostlet/hostlet/sync"
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
	maxUnavailable maxUnavailable
}

func newPublishCommand(g *globalFlags) *cobra.Command {
	var (
		o           publishOptions
		sourceFlags []string
		waveFlags   []string
		resume      string
		abort       string
		maxUnavail  string
	)
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Render every host's via: etcd git sources at a commit and publish them to etcd, in waves",
		Long: `Publish git revision --ref to a fleet through etcd.

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
halted release.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(o.output); err != nil {
				return err
			}
			var err error
			if o.overrides, err = parseSourceFlags(sourceFlags); err != nil {
				return err
			}
			if o.maxUnavailable, err = parseMaxUnavailable(maxUnavail); err != nil {
				return err
			}
			if abort != "" {
				if o.ref != "" || resume != "" || len(waveFlags) > 0 {
					return errors.New("--abort REV takes no --ref, --resume or --wave: it publishes the release before REV")
				}
				o.abort = abort
				o.configs = g.configFiles
				if len(o.configs) == 0 {
					return errors.New("--config is required: one per host to publish to")
				}
				return abortRelease(cmd.Context(), cmd.OutOrStdout(), o)
			}
			if resume != "" {
				if o.ref != "" && o.ref != resume {
					return fmt.Errorf("--resume %s and --ref %s: give one revision", resume, o.ref)
				}
				if len(waveFlags) > 0 {
					return errors.New("--resume takes the waves of the release record: do not give --wave")
				}
				o.ref, o.resume = resume, true
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
			for _, w := range waveFlags {
				wave, err := fleet.ParseWave(w)
				if err != nil {
					return fmt.Errorf("--wave: %w", err)
				}
				o.waves = append(o.waves, wave)
			}
			o.configs = g.configFiles
			return publish(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	cmd.Flags().StringArrayVar(&sourceFlags, "source", nil, "read git source NAME from the checkout DIR (NAME=DIR, repeatable; every via: etcd source needs one)")
	cmd.Flags().StringVar(&o.ref, "ref", "", "git revision to publish (branch, tag or commit), resolved in the --source checkouts")
	cmd.Flags().StringSliceVar(&o.endpoints, "etcd-endpoints", nil, "etcd endpoints (default: the first config's etcd.endpoints)")
	cmd.Flags().StringVar(&o.prefix, "etcd-prefix", "", "etcd key prefix (default: the first config's etcd.prefix)")
	cmd.Flags().StringArrayVar(&waveFlags, "wave", nil, "a wave, 'NAME: SELECTOR' (k=v[,k=v] or *), repeatable, in order")
	cmd.Flags().DurationVar(&o.waveTimeout, "wave-timeout", 10*time.Minute, "how long a wave's hosts have to report the release")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print the plan; write nothing")
	cmd.Flags().StringVar(&maxUnavail, "max-unavailable", "", "write a wave N hosts (or P% of its hosts) at a time, each batch waited for before the next (default: the whole wave at once)")
	cmd.Flags().StringVar(&abort, "abort", "", "take back the halted release REV (a commit SHA, or its start): publish the last complete release before it again")
	cmd.Flags().StringVar(&resume, "resume", "", "go on with the halted release of revision REV (after a fix on its hosts), in its record's waves")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text or json")
	return cmd
}

// publishHost is one host of a release: its sets at the revision and
// what publishing them changes.
type publishHost struct {
	Name   string
	Config string
	Labels map[string]string
	// Sets are the host's via: etcd sources at the revision, in config
	// order; enc their encodings.
	Sets []fleet.Published
	enc  [][]byte
	// Changed names the sources whose set (or release) differs from what
	// etcd holds; modRevs are the keys' mod revisions when read (0:
	// absent), so that a write never overwrites a set written meanwhile.
	Changed []string
	modRevs map[string]int64
	// pods are the pods the host's sets make (by ID: the spec hash the
	// host will report in the pod's rollout), as diff computes them.
	pods map[string]string
}

func (h *publishHost) key(prefix, source string) string {
	return fleet.DesiredKey(prefix, h.Name, source)
}

// publishReport is the JSON output of publish (docs/fleet.md).
type publishReport struct {
	DryRun  bool          `json:"dryRun"`
	Release fleet.Release `json:"release"`
	Hosts   []publishedJS `json:"hosts"`
	// Skipped are hosts without a via: etcd git source.
	Skipped []string `json:"skipped"`
	Errors  []string `json:"errors"`
}

type publishedJS struct {
	Host    string   `json:"host"`
	Config  string   `json:"config"`
	Wave    string   `json:"wave"`
	Sources []string `json:"sources"`
	Changed []string `json:"changed"`
}

// publishOut prints publish's progress (text) or its summary (JSON).
type publishOut struct {
	w    io.Writer
	json bool
	rep  publishReport
}

// printf prints a line of text output (not with -o json): its arguments,
// hosts' names, errors and a release's reasons from etcd, through
// terminalArgs.
func (p *publishOut) printf(format string, args ...any) {
	if !p.json {
		fprintText(p.w, format, args...)
	}
}

// done prints the summary and returns err.
func (p *publishOut) done(err error) error {
	if p.json {
		if werr := writeJSON(p.w, p.rep); werr != nil {
			return werr
		}
	} else {
		n := len(p.rep.Release.HostsChanged)
		switch {
		case p.rep.DryRun:
			p.printf("Dry run: %s would change; nothing written.\n", plural(n, "host"))
		case len(p.rep.Errors) == 0 && err == nil:
			p.printf("%s changed.\n", plural(n, "host"))
		}
	}
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// publishEtcdTimeout bounds each etcd request of publish; publishRetry
// is the pause before reading the hosts' status again after etcd failed.
var (
	publishEtcdTimeout = 15 * time.Second
	publishRetry       = time.Second
)

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
		return nil, "", fmt.Errorf("no --etcd-endpoints and %s has no etcd.endpoints", configName(first))
	}
	return endpoints, prefix, nil
}

func publish(ctx context.Context, w io.Writer, o publishOptions) error {
	if o.output != "json" {
		w = terminalSafe(w)
	}
	out := &publishOut{w: w, json: o.output == "json", rep: publishReport{DryRun: o.dryRun, Hosts: []publishedJS{}, Skipped: []string{}, Errors: []string{}}}

	// Render and validate every host first: nothing is written unless
	// every host's set is valid.
	var (
		hosts []*publishHost
		first *config.Config
		rev   string
	)
	used := map[string]bool{}
	names := map[string]string{}
	for _, file := range o.configs {
		cfg, err := config.Load(file)
		if err != nil {
			return err
		}
		if first == nil {
			first = cfg
		}
		if prev, dup := names[cfg.Hostname]; dup {
			return fmt.Errorf("host %s: configs %s and %s have the same hostname", cfg.Hostname, prev, cfg.File)
		}
		names[cfg.Hostname] = cfg.File
		h, errs, err := renderHost(ctx, cfg, o.ref, o.overrides, used)
		if err != nil {
			return err
		}
		if h == nil {
			out.rep.Skipped = append(out.rep.Skipped, cfg.Hostname)
			out.printf("host %s: no git source with via: etcd; skipped\n", cfg.Hostname)
			continue
		}
		out.rep.Errors = append(out.rep.Errors, errs...)
		for _, s := range h.Sets {
			if rev == "" {
				rev = s.Release
			} else if s.Release != rev {
				return fmt.Errorf("--ref %s is commit %s in one checkout and %s in another: publish one repository's commit", o.ref, rev, s.Release)
			}
		}
		hosts = append(hosts, h)
	}
	for _, name := range slices.Sorted(maps.Keys(o.overrides)) {
		if !used[name] {
			return fmt.Errorf("--source %s: no host given has a git source %q with via: etcd", name, name)
		}
	}
	if len(out.rep.Errors) > 0 {
		for _, e := range out.rep.Errors {
			out.printf("%s\n", e)
		}
		out.printf("INVALID: %s; nothing published.\n", plural(len(out.rep.Errors), "error"))
		return out.done(&exitError{code: 1, silent: true})
	}
	if len(hosts) == 0 {
		return errors.New("no host given has a git source with via: etcd: nothing to publish")
	}

	// Waves, before anything is read from or written to etcd.
	fh := make([]fleet.Host, len(hosts))
	byName := map[string]*publishHost{}
	for i, h := range hosts {
		fh[i] = fleet.Host{Name: h.Name, Labels: h.Labels}
		byName[h.Name] = h
	}
	var (
		assigned [][]fleet.Host
		waves    []fleet.Wave
		err      error
	)
	if !o.resume {
		if assigned, waves, err = fleet.Assign(fh, o.waves); err != nil {
			return err
		}
	}

	endpoints, prefix, err := publishEtcd(o, first)
	if err != nil {
		return err
	}
	cli, etcdErr, err := dialFleetEtcd(endpoints)
	if err != nil {
		return err
	}
	defer cli.Close()
	for _, h := range hosts {
		if err := h.compare(ctx, cli, prefix); err != nil {
			return etcdErr(err)
		}
	}

	// A release halted before is not pushed on by publishing it again:
	// its hosts that have it are unchanged and would not be waited for.
	prev, err := getRelease(ctx, cli, prefix, rev)
	if err != nil {
		return etcdErr(err)
	}
	now := time.Now().UTC()
	rel := fleet.Release{Rev: rev, Ref: o.ref, Time: now, Updated: now, State: fleet.StateWaiting, HostsChanged: []string{}, Waves: []fleet.WaveRecord{}}
	// again: per wave, the hosts a resumed release waits for again
	// (written before, in a wave that did not complete).
	again := map[string][]string{}
	switch {
	case o.resume && prev == nil:
		return fmt.Errorf("--resume %s: no release record of %s at %s", o.ref, rev, fleet.ReleaseKey(prefix, rev))
	case o.resume && prev.State == fleet.StateComplete:
		out.rep.Release = *prev
		out.printf("release %s is complete: nothing to resume\n", shortRev(rev))
		return out.done(nil)
	case o.resume:
		for _, pw := range prev.Waves {
			sel, err := fleet.ParseSelector(pw.Selector)
			if err != nil {
				return fmt.Errorf("--resume %s: the release record's wave %s: %w", o.ref, pw.Name, err)
			}
			waves = append(waves, fleet.Wave{Name: pw.Name, Selector: sel})
			if pw.State == fleet.StateWaiting || pw.State == fleet.StateHalted {
				again[pw.Name] = pw.Changed
			}
		}
		if assigned, waves, err = fleet.Assign(fh, waves); err != nil {
			return fmt.Errorf("--resume %s: %w", o.ref, err)
		}
		rel.Time = prev.Time
		out.printf("resuming release %s, halted: %s\n", shortRev(rev), prev.Reason)
	case prev != nil && prev.State == fleet.StateHalted:
		return fmt.Errorf("release %s halted at %s: %s; publish a fix (another commit), or --resume %s after a fix on the hosts", shortRev(rev), prev.Updated.Format(time.RFC3339), prev.Reason, o.ref)
	case prev != nil && prev.State == fleet.StateWaiting:
		// An earlier publish of it stopped (interrupted, or still
		// running): publishing it again would count the hosts it wrote
		// as unchanged and skip their waits (a canary's included).
		return fmt.Errorf("release %s is still Waiting (since %s): an earlier publish of it stopped before its waves ended, or is running; --resume %s goes on with its waves", shortRev(rev), prev.Updated.Format(time.RFC3339), o.ref)
	}
	for i, wave := range waves {
		wr := fleet.WaveRecord{Name: wave.Name, Selector: wave.Selector.String(), Hosts: []string{}, Changed: []string{}, State: fleet.StatePending}
		for _, fhost := range assigned[i] {
			h := byName[fhost.Name]
			wr.Hosts = append(wr.Hosts, h.Name)
			var srcs []string
			for _, s := range h.Sets {
				srcs = append(srcs, s.Source)
			}
			out.rep.Hosts = append(out.rep.Hosts, publishedJS{Host: h.Name, Config: h.Config, Wave: wave.Name, Sources: srcs, Changed: append([]string{}, h.Changed...)})
			if len(h.Changed) > 0 || slices.Contains(again[wave.Name], h.Name) {
				wr.Changed = append(wr.Changed, h.Name)
				rel.HostsChanged = append(rel.HostsChanged, h.Name)
			}
		}
		rel.Waves = append(rel.Waves, wr)
	}
	out.rep.Release = rel
	out.printf("release %s (%s): %s of %d change\n", shortRev(rev), o.ref, plural(len(rel.HostsChanged), "host"), len(hosts))
	for _, wr := range rel.Waves {
		var unchanged []string
		for _, h := range wr.Hosts {
			if !slices.Contains(wr.Changed, h) {
				unchanged = append(unchanged, h)
			}
		}
		line := fmt.Sprintf("  wave %s (%s): changes %s", wr.Name, wr.Selector, listOrNone(wr.Changed))
		if len(unchanged) > 0 {
			line += "; unchanged " + strings.Join(unchanged, ", ")
		}
		out.printf("%s\n", line)
	}
	if o.dryRun || len(rel.HostsChanged) == 0 {
		// Nothing to write: not even the release record, so that
		// publishing a commit again writes nothing.
		return out.done(nil)
	}

	rec := &out.rep.Release
	written := 0 // hosts written so far
	for i := range rec.Waves {
		wr := &rec.Waves[i]
		if len(wr.Changed) == 0 {
			wr.State, wr.Reason = fleet.StateComplete, "no host of it changes"
			continue
		}
		wr.State = fleet.StateWaiting
		size := o.maxUnavailable.of(len(wr.Hosts))
		if size <= 0 || size > len(wr.Changed) {
			size = len(wr.Changed)
		}
		for first := 0; first < len(wr.Changed); first += size {
			batch := wr.Changed[first:min(first+size, len(wr.Changed))]
			label := "wave " + wr.Name
			if size < len(wr.Changed) {
				label += fmt.Sprintf(" (hosts %d-%d of %d)", first+1, first+len(batch), len(wr.Changed))
			}
			reason, err := writeAndWait(ctx, out, cli, prefix, rev, rec, byName, batch, label, o.waveTimeout, &written)
			if err != nil {
				return out.done(etcdErr(fmt.Errorf("%s: %w", label, err)))
			}
			if reason == "" {
				continue
			}
			wr.State, wr.Reason = fleet.StateHalted, reason
			rec.State, rec.Reason, rec.Updated = fleet.StateHalted, fmt.Sprintf("%s: %s", label, reason), time.Now().UTC()
			var left []string
			for _, later := range rec.Waves[i+1:] {
				left = append(left, later.Name)
			}
			werr := putRelease(ctx, cli, prefix, *rec)
			out.printf("%s: halted: %s\n", label, reason)
			if rest := len(wr.Changed) - first - len(batch); rest > 0 {
				out.printf("%s of wave %s not written\n", plural(rest, "host"), wr.Name)
			}
			out.printf("%s changed; release halted, waves not written: %s\n", plural(written, "host"), listOrNone(left))
			out.rep.Errors = append(out.rep.Errors, rec.Reason)
			err = fmt.Errorf("release %s halted: %s", shortRev(rev), rec.Reason)
			if werr != nil {
				err = fmt.Errorf("%w (and the release record could not be written: %v)", err, etcdErr(werr))
			}
			return out.done(&exitError{code: 1, err: err})
		}
		wr.State = fleet.StateComplete
		rec.Updated = time.Now().UTC()
		out.printf("wave %s: complete\n", wr.Name)
	}
	rec.State, rec.Updated = fleet.StateComplete, time.Now().UTC()
	if err := putRelease(ctx, cli, prefix, *rec); err != nil {
		return out.done(etcdErr(err))
	}
	return out.done(nil)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// writeAndWait writes the changed keys of hosts (one transaction, or as
// few as etcd's limits allow) with the release record, then waits for the
// hosts to report the release; written counts the hosts written. It
// returns why the release halts, or "".
func writeAndWait(ctx context.Context, out *publishOut, cli *clientv3.Client, prefix, rev string, rec *fleet.Release, byName map[string]*publishHost, hosts []string, label string, timeout time.Duration, written *int) (string, error) {
	rec.Updated = time.Now().UTC()
	var (
		puts  []clientv3.Op
		cmps  []clientv3.Cmp
		wrote int
	)
	for _, name := range hosts {
		h := byName[name]
		if len(h.Changed) > 0 {
			wrote++
		}
		for j, s := range h.Sets {
			if !slices.Contains(h.Changed, s.Source) {
				continue
			}
			key := h.key(prefix, s.Source)
			puts = append(puts, clientv3.OpPut(key, string(h.enc[j])))
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", h.modRevs[key]))
		}
	}
	n, err := writeWave(ctx, cli, cmps, puts, releaseOp(prefix, *rec))
	if err != nil {
		return "", err
	}
	*written += wrote
	note := ""
	if n > 1 {
		note = fmt.Sprintf(" in %d transactions", n)
	}
	if w := len(hosts) - wrote; w > 0 {
		note += fmt.Sprintf(", %s written before", plural(w, "host"))
	}
	out.printf("%s: written (%s%s); waiting up to %s\n", label, plural(wrote, "host"), note, timeout)

	// Every via: etcd source of a host holds the release now (unchanged
	// keys held it already): the host reports it on all.
	var waitFor []waitHost
	for _, name := range hosts {
		var srcs []string
		for _, s := range byName[name].Sets {
			srcs = append(srcs, s.Source)
		}
		waitFor = append(waitFor, waitHost{name: name, sources: srcs, pods: byName[name].pods})
	}
	return waitWave(ctx, cli, prefix, rev, waitFor, timeout)
}

// maxUnavailable is --max-unavailable: N hosts, or P percent of a wave's.
type maxUnavailable struct {
	n, percent int
}

func parseMaxUnavailable(s string) (maxUnavailable, error) {
	if s == "" {
		return maxUnavailable{}, nil
	}
	num, pct := strings.CutSuffix(s, "%")
	v, err := strconv.Atoi(num)
	switch {
	case err != nil || v < 1:
		return maxUnavailable{}, fmt.Errorf("--max-unavailable %q: want N or P%% (N, P at least 1)", s)
	case pct && v > 100:
		return maxUnavailable{}, fmt.Errorf("--max-unavailable %q: over 100%%", s)
	case pct:
		return maxUnavailable{percent: v}, nil
	}
	return maxUnavailable{n: v}, nil
}

// of is how many of a wave of total hosts update at a time: 0 for all.
func (m maxUnavailable) of(total int) int {
	if m.percent > 0 {
		return max(1, (total*m.percent+99)/100)
	}
	return m.n
}

// renderHost reads cfg's git sources with via: etcd from their checkouts
// at ref, as `hostlet diff --against ref:REV` reads them, and validates
// their merged set. It returns nil for a host without such a source; the
// validation errors name the host, then source:file. used collects the
// --source names read.
func renderHost(ctx context.Context, cfg *config.Config, ref string, overrides map[string]string, used map[string]bool) (*publishHost, []string, error) {
	h := &publishHost{Name: cfg.Hostname, Config: cfg.File, Labels: cfg.Labels, modRevs: map[string]int64{}}
	compose := configured.Renderer(cfg)
	var reads []sourceRead
	for _, s := range cfg.Sources {
		if s.Type != config.TypeGit || s.Via != config.ViaEtcd {
			continue
		}
		dir := overrides[s.Name]
		if dir == "" {
			return nil, nil, fmt.Errorf("host %s: source %s has via: etcd: give its checkout with --source %s=DIR", cfg.Hostname, s.Name, s.Name)
		}
		used[s.Name] = true
		src, err := configured.New(s, configured.Deps{Dirs: overrides, Compose: compose})
		if err != nil {
			return nil, nil, err
		}
		ra, ok := src.(readableAt)
		if !ok {
			return nil, nil, fmt.Errorf("host %s: source %s cannot be read at a revision", cfg.Hostname, s.Name)
		}
		snap, err := ra.ReadAt(ctx, ref)
		if ce := (*gitsource.CheckoutError)(nil); errors.As(err, &ce) {
			// ReadAt speaks of diff's flag: say publish's.
			return nil, nil, errors.New(strings.NewReplacer("--against ref: needs", "--ref needs", "--against ref:", "--ref ").Replace(err.Error()))
		}
		reads = append(reads, sourceRead{Snapshot: snap, Err: err})
		h.Sets = append(h.Sets, fleet.Published{Release: snap.Revision, Source: s.Name, Files: snap.Files, Manifests: snap.Manifests})
	}
	if len(reads) == 0 {
		return nil, nil, nil
	}
	var errs []string
	vopts := configured.ValidateOptions(cfg)
	for _, e := range buildValidateReport(reads, vopts).Errors {
		errs = append(errs, "host "+cfg.Hostname+": "+e.Error())
	}
	h.pods = map[string]string{}
	for _, p := range desiredFrom(reads, vopts) {
		h.pods[p.Manifest.ID] = manifest.PodHash(p.Manifest)
	}
	for _, p := range h.Sets {
		b, err := fleet.EncodePublished(p)
		if err != nil {
			return nil, nil, fmt.Errorf("host %s: %w", cfg.Hostname, err)
		}
		// What the host will read must decode there (its size bounded),
		// and fit in one etcd request.
		if _, err := fleet.DecodePublished(b, p.Source); err != nil {
			errs = append(errs, fmt.Sprintf("host %s: source %s: %v", cfg.Hostname, p.Source, err))
		} else if len(b) > maxValueBytes {
			errs = append(errs, fmt.Sprintf("host %s: source %s: published set of %d bytes compressed, over the %d an etcd request holds by default", cfg.Hostname, p.Source, len(b), maxValueBytes))
		}
		h.enc = append(h.enc, b)
	}
	return h, errs, nil
}

// compare reads what etcd holds for each of h's sources and records
// which differ from h's sets (Changed) and the keys' mod revisions. Sets
// compare decoded, release included: every host of a new commit is
// written, even when its manifests are the same (so that every host
// reports the latest release); the same commit again writes nothing.
func (h *publishHost) compare(ctx context.Context, cli *clientv3.Client, prefix string) error {
	for i, p := range h.Sets {
		key := h.key(prefix, p.Source)
		rctx, cancel := context.WithTimeout(ctx, publishEtcdTimeout)
		resp, err := cli.Get(rctx, key)
		cancel()
		if err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
		if len(resp.Kvs) == 1 {
			h.modRevs[key] = resp.Kvs[0].ModRevision
			if sameSet(resp.Kvs[0].Value, h.enc[i], p.Source) {
				continue
			}
		}
		h.Changed = append(h.Changed, p.Source)
	}
	return nil
}

// sameSet reports whether two encoded published sets are the same
// release of the same set: both decoded and encoded again as JSON (gzip
// output may differ between Go versions for the same content).
func sameSet(old, new []byte, source string) bool {
	canon := func(b []byte) []byte {
		p, err := fleet.DecodePublished(b, source)
		if err != nil {
			return nil
		}
		j, err := json.Marshal(p)
		if err != nil {
			return nil
		}
		return j
	}
	a, b := canon(old), canon(new)
	return a != nil && bytes.Equal(a, b)
}

// Limits of one etcd transaction: embedded and default etcd refuse more
// than 128 operations (--max-txn-ops) or 1.5 MiB (--max-request-bytes).
// A wave's puts are split at maxTxnBytes; one host's set over
// maxValueBytes is refused before anything is written.
const (
	maxTxnOps     = 128
	maxTxnBytes   = 1 << 20
	maxValueBytes = 3<<19 - 64<<10
)

// writeWave writes a wave's puts, each guarded by its compare (the key
// as read), and the release record, in one transaction, or in as few as
// etcd's limits allow (the record in the last): it returns how many. A
// failed compare is an error: another publish wrote meanwhile.
func writeWave(ctx context.Context, cli *clientv3.Client, cmps []clientv3.Cmp, puts []clientv3.Op, record clientv3.Op) (int, error) {
	type chunk struct {
		cmps []clientv3.Cmp
		puts []clientv3.Op
	}
	var chunks []chunk
	cur, size := chunk{}, 0
	for i, p := range puts {
		n := len(p.KeyBytes()) + len(p.ValueBytes())
		if len(cur.puts) > 0 && (len(cur.puts)+1 >= maxTxnOps || size+n > maxTxnBytes) {
			chunks = append(chunks, cur)
			cur, size = chunk{}, 0
		}
		cur.cmps, cur.puts, size = append(cur.cmps, cmps[i]), append(cur.puts, p), size+n
	}
	// The record goes with the last puts when it fits, else on its own:
	// it grows with the fleet (every host's name).
	if n := len(record.KeyBytes()) + len(record.ValueBytes()); len(cur.puts)+1 < maxTxnOps && size+n <= maxTxnBytes {
		cur.puts = append(cur.puts, record)
		chunks = append(chunks, cur)
	} else {
		chunks = append(chunks, cur, chunk{puts: []clientv3.Op{record}})
	}
	for i, c := range chunks {
		if err := commitChunk(ctx, cli, c.cmps, c.puts); err != nil {
			return i, err
		}
	}
	return len(chunks), nil
}

// publishTries bounds the tries of one transaction that etcd did not
// answer (a leader election after a member was lost).
const publishTries = 5

// commitChunk commits one transaction of a wave. A try etcd did not
// answer may have been applied: the next try, whose compares then fail,
// reads the keys back, and their holding exactly what was written counts
// as done.
func commitChunk(ctx context.Context, cli *clientv3.Client, cmps []clientv3.Cmp, puts []clientv3.Op) error {
	unanswered := false
	for try := 1; ; try++ {
		tctx, cancel := context.WithTimeout(ctx, publishEtcdTimeout)
		resp, err := cli.Txn(tctx).If(cmps...).Then(puts...).Commit()
		cancel()
		switch {
		case err != nil && ctx.Err() == nil && try < publishTries:
			unanswered = true
			if !clock.Sleep(ctx, clock.Real{}, time.Duration(try)*time.Second) {
				return ctx.Err()
			}
			continue
		case err != nil:
			return err
		case resp.Succeeded:
			return nil
		case unanswered && holds(ctx, cli, puts):
			return nil
		}
		return errors.New("a host's key changed since it was read (another publish at the same time?); publish again")
	}
}

// holds reports whether every key of puts holds the value put.
func holds(ctx context.Context, cli *clientv3.Client, puts []clientv3.Op) bool {
	for _, p := range puts {
		tctx, cancel := context.WithTimeout(ctx, publishEtcdTimeout)
		resp, err := cli.Get(tctx, string(p.KeyBytes()))
		cancel()
		if err != nil || len(resp.Kvs) != 1 || !bytes.Equal(resp.Kvs[0].Value, p.ValueBytes()) {
			return false
		}
	}
	return true
}

func releaseOp(prefix string, rec fleet.Release) clientv3.Op {
	b, _ := json.Marshal(rec) // plain strings and times: never fails
	return clientv3.OpPut(fleet.ReleaseKey(prefix, rec.Rev), string(b))
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
	endpoints, prefix, err := publishEtcd(o, first)
	if err != nil {
		return err
	}
	cli, etcdErr, err := dialFleetEtcd(endpoints)
	if err != nil {
		return err
	}
	defer cli.Close()
	rctx, cancel := context.WithTimeout(ctx, publishEtcdTimeout)
	resp, err := cli.Get(rctx, fleet.ReleaseKey(prefix, "")+"/", clientv3.WithPrefix())
	cancel()
	if err != nil {
		return etcdErr(err)
	}
	var (
		cur     *fleet.Release
		records []fleet.Release
	)
	for _, kv := range resp.Kvs {
		var rec fleet.Release
		if json.Unmarshal(kv.Value, &rec) != nil || rec.Rev == "" {
			continue
		}
		records = append(records, rec)
		if strings.HasPrefix(rec.Rev, o.abort) {
			if cur != nil {
				return fmt.Errorf("--abort %s: more than one release starts so (%s, %s): give more of the SHA", o.abort, shortRev(cur.Rev), shortRev(rec.Rev))
			}
			cur = &rec
		}
	}
	if cur == nil {
		return fmt.Errorf("--abort %s: no release record at %s", o.abort, fleet.ReleaseKey(prefix, o.abort))
	}
	if cur.State == fleet.StateComplete || cur.State == fleet.StateAborted {
		return fmt.Errorf("--abort %s: release %s is %s; publish the commit to go back to", o.abort, shortRev(cur.Rev), cur.State)
	}
	var prev *fleet.Release
	for i, rec := range records {
		if rec.Rev != cur.Rev && rec.State == fleet.StateComplete && rec.Time.Before(cur.Time) && (prev == nil || rec.Time.After(prev.Time)) {
			prev = &records[i]
		}
	}
	if prev == nil {
		return fmt.Errorf("--abort %s: no complete release before %s to go back to", o.abort, shortRev(cur.Rev))
	}
	if o.output != "json" {
		fmt.Fprintf(w, "aborting release %s: publishing %s again\n", shortRev(cur.Rev), shortRev(prev.Rev))
	}
	o.ref = prev.Rev
	if err := publish(ctx, w, o); err != nil || o.dryRun {
		return err
	}
	cur.State, cur.Reason, cur.Updated = fleet.StateAborted, fmt.Sprintf("aborted: %s published again", prev.Rev), time.Now().UTC()
	if err := putRelease(ctx, cli, prefix, *cur); err != nil {
		return etcdErr(err)
	}
	if o.output != "json" {
		fmt.Fprintf(w, "release %s aborted.\n", shortRev(cur.Rev))
	}
	return nil
}

// getRelease reads the record of release rev; nil when there is none.
func getRelease(ctx context.Context, cli *clientv3.Client, prefix, rev string) (*fleet.Release, error) {
	key := fleet.ReleaseKey(prefix, rev)
	rctx, cancel := context.WithTimeout(ctx, publishEtcdTimeout)
	defer cancel()
	resp, err := cli.Get(rctx, key)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	var rec fleet.Release
	if err := json.Unmarshal(resp.Kvs[0].Value, &rec); err != nil {
		return nil, fmt.Errorf("release record %s: %w", key, err)
	}
	return &rec, nil
}

func putRelease(ctx context.Context, cli *clientv3.Client, prefix string, rec fleet.Release) error {
	return commitChunk(ctx, cli, nil, []clientv3.Op{releaseOp(prefix, rec)})
}

// waitHost is a host a wave waits for, the sources written for it and
// the pods they make (ID to spec hash).
type waitHost struct {
	name    string
	sources []string
	pods    map[string]string
}

// waitWave waits until every host reports the release rev on its sources
// with its pods' rollouts done (nil, ""), a host reports a pod of the
// release rolled back or failed, or timeout passes (the reason why it
// halts the release). Hosts' status documents are read from etcd and
// watched: no polling.
func waitWave(ctx context.Context, cli *clientv3.Client, prefix, rev string, hosts []waitHost, timeout time.Duration) (string, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	statusPrefix, _, _ := reporter.Keys(prefix, "") // prefix/status/
	byKey := map[string]waitHost{}
	progress := map[string]string{}
	for _, h := range hosts {
		key, _, _ := reporter.Keys(prefix, h.name)
		byKey[key] = h
		progress[h.name] = "no status reported"
	}
	done := map[string]bool{}
	var etcdErr error // the last failed read, while etcd fails
	// see evaluates a host's status: a reason to halt, or "".
	see := func(key string, value []byte) string {
		h, ok := byKey[key]
		if !ok || done[h.name] {
			return ""
		}
		var doc api.Document
		if err := json.Unmarshal(value, &doc); err != nil {
			progress[h.name] = "status unreadable: " + err.Error()
			return ""
		}
		fin, halt, waiting := releaseProgress(doc, rev, h.sources, h.pods)
		switch {
		case halt != "":
			return "host " + h.name + ": " + halt
		case fin:
			done[h.name] = true
		default:
			progress[h.name] = waiting
		}
		return ""
	}
	timedOut := func() string {
		var parts []string
		for _, h := range hosts {
			if !done[h.name] {
				parts = append(parts, h.name+": "+progress[h.name])
			}
		}
		if etcdErr != nil {
			parts = append(parts, "etcd: "+etcdErr.Error())
		}
		return fmt.Sprintf("not reported within --wave-timeout %s: %s", timeout, strings.Join(parts, "; "))
	}
	for {
		// List once, then watch from there; again if the watch ends.
		gctx, gcancel := context.WithTimeout(wctx, publishEtcdTimeout)
		resp, err := cli.Get(gctx, statusPrefix, clientv3.WithPrefix())
		gcancel()
		if err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			if wctx.Err() != nil {
				return timedOut(), nil
			}
			// etcd unreachable (a member down, no leader): the hosts go
			// on without it; try again until the wave's time is up.
			etcdErr = err
			select {
			case <-wctx.Done():
			case <-time.After(publishRetry):
			}
			continue
		}
		etcdErr = nil
		for _, kv := range resp.Kvs {
			if reason := see(string(kv.Key), kv.Value); reason != "" {
				return reason, nil
			}
		}
		if len(done) == len(hosts) {
			return "", nil
		}
		watch := cli.Watch(clientv3.WithRequireLeader(wctx), statusPrefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
		for wresp := range watch {
			if wresp.Err() != nil {
				break
			}
			for _, ev := range wresp.Events {
				if ev.Type != clientv3.EventTypePut {
					continue
				}
				if reason := see(string(ev.Kv.Key), ev.Kv.Value); reason != "" {
					return reason, nil
				}
			}
			if len(done) == len(hosts) {
				return "", nil
			}
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		if wctx.Err() != nil {
			return timedOut(), nil
		}
	}
}

// releaseProgress says where a host stands with release rev, written to
// its sources: done when every source reports rev and no pod of them is
// still rolling out or pending at rev; halt (why) when a pod of rev was
// rolled back, or failed with no rollback coming; else what it waits for
// (a failed pod its host is rolling back halts the release once its
// rollback shows, with the rollback's reason).
func releaseProgress(doc api.Document, rev string, srcs []string, pods map[string]string) (done bool, halt, waiting string) {
	of := map[string]bool{}
	for _, s := range srcs {
		of[s] = true
	}
	failing := ""
	for _, p := range doc.Pods {
		if !of[p.Source] {
			continue
		}
		if r := p.Rollout; r != nil && r.State == hsync.RolloutRolledBack && (r.Revision == rev || (r.Hash != "" && r.Hash == pods[p.ID])) {
			why := ""
			if r.Reason != "" {
				why = ": " + r.Reason
			}
			return false, fmt.Sprintf("pod %s rolled back%s", p.ID, why), ""
		}
		if p.Phase == hsync.PhaseFailed && p.Revision == rev {
			if rollingBack(p) {
				// The host is about to put the last ready version back:
				// its rollback says why.
				failing = fmt.Sprintf("pod %s failed (%s); the host rolls it back", p.ID, p.Reason)
				continue
			}
			why := p.Reason
			if p.Message != "" && !strings.HasPrefix(p.Message, p.Reason) {
				why += ": " + p.Message
			} else if p.Message != "" {
				why = p.Message
			}
			return false, fmt.Sprintf("pod %s failed: %s", p.ID, why), ""
		}
	}
	if failing != "" {
		return false, "", failing
	}
	for _, name := range srcs {
		i := slices.IndexFunc(doc.Sources, func(s sources.Status) bool { return s.Name == name })
		switch {
		case i < 0:
			return false, "", fmt.Sprintf("source %s not in its status", name)
		case doc.Sources[i].Revision != rev:
			w := fmt.Sprintf("source %s at %s", name, cmp.Or(shortRev(doc.Sources[i].Revision), "no revision"))
			if e := doc.Sources[i].Error; e != "" {
				w += " (error: " + e + ")"
			}
			return false, "", w
		}
	}
	// Every pod of the release reported, at its version: a source may
	// report the release before the sync that applies it.
	for _, id := range slices.Sorted(maps.Keys(pods)) {
		i := slices.IndexFunc(doc.Pods, func(p hsync.PodStatus) bool { return p.ID == id })
		if i < 0 {
			return false, "", fmt.Sprintf("pod %s not reported yet", id)
		}
		p := doc.Pods[i]
		switch r := p.Rollout; {
		case p.Revision != rev:
			// Not synced since its source took the release.
			return false, "", fmt.Sprintf("pod %s not synced at the release yet", id)
		case r != nil && r.Hash != "" && r.Hash != pods[id]:
			if r.State == hsync.RolloutHeld {
				return false, "", fmt.Sprintf("pod %s held", id)
			}
			return false, "", fmt.Sprintf("pod %s not at the release's version yet", id)
		case r != nil && r.State == hsync.RolloutProgressing:
			return false, "", fmt.Sprintf("pod %s rollout Progressing", id)
		case r == nil && p.Phase == hsync.PhasePending:
			return false, "", fmt.Sprintf("pod %s Pending", id)
		}
	}
	for _, p := range doc.Pods {
		if r := p.Rollout; of[p.Source] && r != nil && r.State == hsync.RolloutProgressing {
			return false, "", fmt.Sprintf("pod %s rollout Progressing", p.ID)
		}
	}
	return true, "", ""
}

// rollingBack reports whether a failed pod's update is about to be rolled
// back by its host: still Progressing, with a ready version before it,
// and rollback Auto. A new pod, or one with rollback Never or Hold, stays
// failed: that halts a release at once.
func rollingBack(p hsync.PodStatus) bool {
	r := p.Rollout
	if r == nil || r.State != hsync.RolloutProgressing || r.PreviousHash == "" {
		return false
	}
	return p.Manifest == nil || p.Manifest.Rollback == "" || p.Manifest.Rollback == manifest.RollbackAuto
}
