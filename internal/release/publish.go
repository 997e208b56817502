package release

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/fleet"
)

// Publisher writes releases to one etcd under one prefix.
type Publisher struct {
	// Etcd and Prefix: where the hosts read their sets (required).
	Etcd   Etcd
	Prefix string
	// Clock reads the time of the records, the wave timeout and the
	// pauses between retries; nil is the real clock.
	Clock clock.Clock
	// Printf receives the release's progress; nil discards it.
	Printf Printf
	// EtcdError wraps an error etcd returned (to name the endpoints
	// without credentials); nil returns it as it is.
	EtcdError func(error) error
	// RequestTimeout bounds each etcd request (0: 15 s); Retry is the
	// pause before reading the hosts' status again after etcd failed
	// (0: 1 s).
	RequestTimeout, Retry time.Duration
	// progressed, when set, learns each change of what a host of a wave
	// waits for (tests wait on it).
	progressed func(host, waiting string)
}

// Options are a publish's choices besides its set.
type Options struct {
	// Waves split the hosts by their labels, in order (none: one wave
	// "all"); a resumed release takes its record's instead.
	Waves []fleet.Wave
	// WaveTimeout is how long a wave's hosts have to report the release
	// (required).
	WaveTimeout time.Duration
	// DryRun decides the waves and which hosts change, and writes
	// nothing.
	DryRun bool
	// Resume goes on with the halted (or interrupted) release of the
	// set's commit, in the waves its record holds.
	Resume bool
	// MaxUnavailable splits a wave into batches written and waited for in
	// turn.
	MaxUnavailable MaxUnavailable
}

// Report is what a publish did (docs/fleet.md documents its JSON, the
// output of `hostlet publish -o json`).
type Report struct {
	DryRun  bool          `json:"dryRun"`
	Release fleet.Release `json:"release"`
	Hosts   []HostReport  `json:"hosts"`
	// Skipped are hosts without a via: etcd git source.
	Skipped []string `json:"skipped"`
	Errors  []string `json:"errors"`
}

// HostReport is one host of a Report: its wave, its sources and those
// the release changes.
type HostReport struct {
	Host    string   `json:"host"`
	Config  string   `json:"config"`
	Wave    string   `json:"wave"`
	Sources []string `json:"sources"`
	Changed []string `json:"changed"`
}

// Report returns the report of s before anything is published: its
// skipped hosts and its errors.
func (s *Set) Report(dryRun bool) *Report {
	rep := &Report{DryRun: dryRun, Hosts: []HostReport{}, Skipped: []string{}, Errors: []string{}}
	rep.Skipped = append(rep.Skipped, s.Skipped...)
	rep.Errors = append(rep.Errors, s.Errors...)
	return rep
}

// Publish publishes set (which must hold no errors) wave by wave. It
// returns the report, or nil when it stopped before deciding anything
// (then err says why); a halted release returns the report and an error
// saying why it halted.
func (p *Publisher) Publish(ctx context.Context, set *Set, o Options) (*Report, error) {
	if !o.Resume && set.assigned == nil {
		if err := set.Assign(o.Waves); err != nil {
			return nil, err
		}
	}
	for _, h := range set.Hosts {
		if err := p.compare(ctx, h); err != nil {
			return nil, p.etcdError(err)
		}
	}
	// A release halted before is not pushed on by publishing it again:
	// its hosts that have it are unchanged and would not be waited for.
	prev, err := p.getRelease(ctx, set.Rev)
	if err != nil {
		return nil, p.etcdError(err)
	}
	r := &run{p: p, set: set, o: o, rep: set.Report(o.DryRun)}
	again, done, err := r.start(prev)
	if err != nil || done {
		return r.reportIf(err == nil), err
	}
	r.record(again)
	if o.DryRun || len(r.rep.Release.HostsChanged) == 0 {
		// Nothing to write: not even the release record, so that
		// publishing a commit again writes nothing.
		return r.rep, nil
	}
	return r.rep, r.waves(ctx)
}

// run is one publish under way: rep.Release is its record.
type run struct {
	p   *Publisher
	set *Set
	o   Options
	rep *Report
	// written counts the hosts written so far.
	written int
}

func (r *run) reportIf(ok bool) *Report {
	if !ok {
		return nil
	}
	return r.rep
}

// start checks the release's earlier record (prev, nil for none): a
// halted or interrupted release is not published again as new; resuming
// takes the record's waves. It returns, per wave, the hosts a resumed
// release waits for again (written before, in a wave that did not
// complete); done when there is nothing to do.
func (r *run) start(prev *fleet.Release) (again map[string][]string, done bool, err error) {
	set, now := r.set, r.p.clock().Now().UTC()
	r.rep.Release = fleet.Release{Rev: set.Rev, Ref: set.Ref, Time: now, Updated: now, State: fleet.StateWaiting, HostsChanged: []string{}, Waves: []fleet.WaveRecord{}}
	switch {
	case r.o.Resume && prev == nil:
		return nil, false, fmt.Errorf("--resume %s: no release record of %s at %s", set.Ref, set.Rev, fleet.ReleaseKey(r.p.Prefix, set.Rev))
	case r.o.Resume && prev.State == fleet.StateComplete:
		r.rep.Release = *prev
		r.p.printf("release %s is complete: nothing to resume\n", ShortRev(set.Rev))
		return nil, true, nil
	case r.o.Resume:
		again, err := r.resume(prev)
		return again, false, err
	case prev != nil && prev.State == fleet.StateHalted:
		return nil, false, fmt.Errorf("release %s halted at %s: %s; publish a fix (another commit), or --resume %s after a fix on the hosts", ShortRev(set.Rev), prev.Updated.Format(time.RFC3339), prev.Reason, set.Ref)
	case prev != nil && prev.State == fleet.StateWaiting:
		// An earlier publish of it stopped (interrupted, or still
		// running): publishing it again would count the hosts it wrote
		// as unchanged and skip their waits (a canary's included).
		return nil, false, fmt.Errorf("release %s is still Waiting (since %s): an earlier publish of it stopped before its waves ended, or is running; --resume %s goes on with its waves", ShortRev(set.Rev), prev.Updated.Format(time.RFC3339), set.Ref)
	}
	return nil, false, nil
}

// resume assigns the hosts to the waves of the release record prev and
// returns, per wave, the hosts to wait for again.
func (r *run) resume(prev *fleet.Release) (map[string][]string, error) {
	again := map[string][]string{}
	var waves []fleet.Wave
	for _, pw := range prev.Waves {
		sel, err := fleet.ParseSelector(pw.Selector)
		if err != nil {
			return nil, fmt.Errorf("--resume %s: the release record's wave %s: %w", r.set.Ref, pw.Name, err)
		}
		waves = append(waves, fleet.Wave{Name: pw.Name, Selector: sel})
		if pw.State == fleet.StateWaiting || pw.State == fleet.StateHalted {
			again[pw.Name] = pw.Changed
		}
	}
	if err := r.set.Assign(waves); err != nil {
		return nil, fmt.Errorf("--resume %s: %w", r.set.Ref, err)
	}
	r.rep.Release.Time = prev.Time
	r.p.printf("resuming release %s, halted: %s\n", ShortRev(r.set.Rev), prev.Reason)
	return again, nil
}

// record fills the release record's waves (every host, and those written:
// changed, or waited for again) and the report's hosts, and prints the
// plan.
func (r *run) record(again map[string][]string) {
	rel := &r.rep.Release
	for i, wave := range r.set.waves {
		wr := fleet.WaveRecord{Name: wave.Name, Selector: wave.Selector.String(), Hosts: []string{}, Changed: []string{}, State: fleet.StatePending}
		for _, fhost := range r.set.assigned[i] {
			h := r.set.byName[fhost.Name]
			wr.Hosts = append(wr.Hosts, h.Name)
			r.rep.Hosts = append(r.rep.Hosts, HostReport{Host: h.Name, Config: h.Config, Wave: wave.Name, Sources: h.sources(), Changed: append([]string{}, h.Changed...)})
			if len(h.Changed) > 0 || slices.Contains(again[wave.Name], h.Name) {
				wr.Changed = append(wr.Changed, h.Name)
				rel.HostsChanged = append(rel.HostsChanged, h.Name)
			}
		}
		rel.Waves = append(rel.Waves, wr)
	}
	r.p.printf("release %s (%s): %s of %d change\n", ShortRev(r.set.Rev), r.set.Ref, Plural(len(rel.HostsChanged), "host"), len(r.set.Hosts))
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
		r.p.printf("%s\n", line)
	}
}

func (p *Publisher) clock() clock.Clock { return clock.Or(p.Clock) }

func (p *Publisher) printf(format string, args ...any) {
	if p.Printf != nil {
		p.Printf(format, args...)
	}
}

func (p *Publisher) etcdError(err error) error {
	if p.EtcdError == nil {
		return err
	}
	return p.EtcdError(err)
}

func (p *Publisher) requestTimeout() time.Duration {
	if p.RequestTimeout <= 0 {
		return 15 * time.Second
	}
	return p.RequestTimeout
}

func (p *Publisher) retry() time.Duration {
	if p.Retry <= 0 {
		return time.Second
	}
	return p.Retry
}

// ShortRev is a commit as output shows it: its first 7 hex digits.
func ShortRev(rev string) string {
	if len(rev) == 40 && !strings.Contains(rev, ":") {
		return rev[:7]
	}
	return rev
}

// Plural is "1 host", "2 hosts".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
