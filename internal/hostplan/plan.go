package hostplan

import (
	"context"
	"io"
	"slices"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// Plan is one host's plan: what `hostlet run --once` would apply, as
// `hostlet diff` prints it (docs/diff.md documents the JSON).
type Plan struct {
	Host    string `json:"host"`
	Config  string `json:"config"`
	Against string `json:"against"`
	// Planned is false when no plan could be computed (Errors say why);
	// Pods, Rejected and Summary are then empty.
	Planned  bool               `json:"planned"`
	Pods     []PodPlan          `json:"pods"`
	Rejected []RejectedManifest `json:"rejected"`
	// Elsewhere are the manifests this host does not run: their
	// nodeSelector does not match its labels (a pod of theirs running
	// here is removed).
	Elsewhere []validate.Elsewhere `json:"elsewhere,omitempty"`
	Summary   Summary              `json:"summary"`
	Errors    []string             `json:"errors"`
}

// Changed reports whether the plan changes anything: a pod whose changes
// are made (not held back nor held).
func (p Plan) Changed() bool {
	return slices.ContainsFunc(p.Pods, func(pp PodPlan) bool { return !pp.Waits() })
}

// PodPlan is one pod the plan changes.
type PodPlan struct {
	ID       string   `json:"id"`
	Source   string   `json:"source"`
	Revision string   `json:"revision,omitempty"`
	Action   string   `json:"action"`
	Changes  []Change `json:"changes"`
	// Notes are what the translation of the pod's manifest did that its
	// author may not expect (manifest.Sourced.Notes); none for a removal.
	Notes []string `json:"notes,omitempty"`
	// HeldBack: the host rolled this desired version back; its last
	// ready version stays and the changes are not made (counted as held
	// back, not as changes).
	HeldBack *HeldBack `json:"heldBack,omitempty"`
	// Held: an operator holds the pod; the changes wait for its release
	// (counted as held, not as changes).
	Held *hsync.Hold `json:"held,omitempty"`
}

// Waits reports whether the pod's changes are not made: held back or held.
func (p PodPlan) Waits() bool { return p.HeldBack != nil || p.Held != nil }

// HeldBack is the rollback that holds a pod's desired version back: the
// revision rolled back and why.
type HeldBack struct {
	Revision string `json:"revision"`
	Reason   string `json:"reason"`
}

// Change is one container slot of a pod's plan. Action "none" leaves the
// container as it is.
type Change struct {
	Container string   `json:"container"`
	Action    string   `json:"action"`
	Reasons   []string `json:"reasons"`
	// Build is the image the change builds first (a container with a
	// build, created or recreated), "" for none. Whether the host has it
	// already is not known here: an image it built before is not built
	// again.
	Build string `json:"build,omitempty"`
}

// RejectedManifest is a manifest the merge rejects.
type RejectedManifest struct {
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

// Summary counts a plan's app containers by what it does to them.
type Summary struct {
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

// Options are what a plan needs besides the host's config file.
type Options struct {
	// Overrides reads source NAME from the folder Overrides[NAME] (a git
	// checkout for a git source) instead of its configured place.
	Overrides map[string]string
	// Status reads what the host last reported (--against status).
	Status func(ctx context.Context, cfg *config.Config) (api.Document, error)
	// Warnings receives warnings (a saved rollouts file that cannot be
	// read); nil discards them.
	Warnings io.Writer
	// SecretsKey is the key file --secrets-key names: the encrypted files
	// of the set are decrypted and their values compared as the host
	// compares them (with its keyed hash, when its stateDir is readable
	// here). Without it, what a pod's secrets hold is not compared.
	SecretsKey string
}

// notCompared is the reason a change shows for a pod whose secrets diff
// did not decrypt.
const notCompared = "secrets not compared (diff --secrets-key KEYFILE compares them)"

// Diff computes the plan of the host whose config is file against
// against (live, status or ref:REV; see ParseAgainst). Errors are
// recorded in the plan: a plan that could not be computed says why.
func Diff(ctx context.Context, file, against string, opts Options) Plan {
	p := Plan{Config: file, Against: against, Pods: []PodPlan{}, Rejected: []RejectedManifest{}, Errors: []string{}}
	if err := p.compute(ctx, file, opts); err != nil {
		p.Errors = append(p.Errors, err.Error())
		p.Pods, p.Rejected, p.Summary, p.Planned = []PodPlan{}, []RejectedManifest{}, Summary{}, false
	}
	return p
}

// compute fills p: the desired side (every source as it is now), the
// other side (what p.Against names), and the plan between them.
func (p *Plan) compute(ctx context.Context, file string, opts Options) error {
	ag, err := ParseAgainst(p.Against)
	if err != nil {
		return err
	}
	cfg, err := config.Load(file)
	if err != nil {
		return err
	}
	p.Host, p.Config = cfg.Hostname, cfg.File
	srcs, closeSources, err := OpenSources(cfg, opts.Overrides)
	if err != nil {
		return err
	}
	defer closeSources()
	if ag.Mode == AgainstRef {
		// Before anything is read: a git source without a checkout would
		// otherwise be fetched from its URL first.
		if err := checkReadableAt(ctx, srcs, ag.Rev, opts.Overrides); err != nil {
			return err
		}
	}
	h := host{cfg: cfg, srcs: srcs, vopts: configured.ValidateOptions(cfg), env: envHasher(cfg), opts: opts}
	h.reads = ReadSources(ctx, srcs)
	p.Errors = append(p.Errors, ReadErrors(h.reads)...)
	checks := SecretChecks{Host: cfg.Hostname, Recipients: cfg.Secrets.Recipients, MAC: h.env.SecretMAC}
	if opts.SecretsKey != "" {
		if checks.Decrypter, err = SecretKeys(ctx, opts.SecretsKey, cfg.Secrets.Helper); err != nil {
			return err
		}
	}
	CheckSecrets(ctx, h.reads, checks)
	h.secretsCompared = checks.Decrypter != nil
	actual, rollouts, err := h.actual(ctx, ag)
	if err != nil {
		return err
	}
	p.plan(h, actual, rollouts)
	return nil
}

// plan merges the desired side as run would and plans it against actual.
func (p *Plan) plan(h host, actual []hruntime.Container, rollouts map[string]hsync.Rollout) {
	m := MergeLikeRun(h.reads, actual, h.cfg.Sync.AllowEmpty, h.vopts)
	p.Errors = append(p.Errors, m.Errors...)
	for _, rj := range m.Rejected {
		p.Rejected = append(p.Rejected, RejectedManifest{ID: rj.ID, Source: rj.Source, File: rj.Origin.File, Reasons: rj.Reasons, Running: m.Stay[rj.ID]})
	}
	p.Elsewhere = m.Elsewhere
	// Pods that stay as they run are out of the plan, counted unchanged.
	kept := 0
	actual = slices.DeleteFunc(actual, func(c hruntime.Container) bool {
		if !m.Stay[c.Pod()] {
			return false
		}
		if c.Slot() != hruntime.InfraName {
			kept++
		}
		return true
	})
	plan := hsync.MakePlan(m.Pods, actual, hsync.PlanOptions{Prune: h.cfg.Sync.Prune, EnvHasher: h.env})
	p.Pods = podPlans(plan, rollouts, notesByPod(h.reads))
	if !h.secretsCompared {
		markSecretsNotCompared(plan, p.Pods)
	}
	p.Summary = summarize(plan, p.Pods)
	p.Summary.Unchanged += kept
	p.Summary.Rejected = len(p.Rejected)
	p.Planned = true
}

// summarize counts the plan's app containers, the changes of pods that
// wait (pods, from podPlans) as held back or held instead of as changes.
func summarize(plan hsync.Plan, pods []PodPlan) Summary {
	c := plan.Counts()
	s := Summary{Create: c.Create, Recreate: c.Recreate, Restart: c.Restart, Remove: c.Remove, Unchanged: c.Unchanged}
	for _, p := range pods {
		if !p.Waits() {
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

// podPlans lists the pods the plan changes, as the output shows them;
// rollouts (by pod ID, nil for none) say which are held back or held.
func podPlans(plan hsync.Plan, rollouts map[string]hsync.Rollout, notes map[string][]string) []PodPlan {
	out := []PodPlan{}
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
		pj := PodPlan{ID: pp.ID, Source: pp.Source, Revision: pp.Revision, Action: action, Changes: changes(pp)}
		if !pp.Remove() {
			pj.Notes = notes[podKey(pp.Source, pp.ID)]
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
				pj.HeldBack = &HeldBack{Revision: r.Revision, Reason: r.Reason}
			}
		}
		out = append(out, pj)
	}
	return out
}

// markSecretsNotCompared gives each change of a pod with secrets that
// diff did not decrypt the reason notCompared in place of what a
// comparison of ciphertext with the host's tokens would claim.
func markSecretsNotCompared(plan hsync.Plan, pods []PodPlan) {
	withSecrets := map[string]bool{}
	for _, pp := range plan.Pods {
		if pp.Desired != nil && pp.Desired.Manifest.HasSecrets() {
			withSecrets[pp.ID] = true
		}
	}
	for i := range pods {
		if !withSecrets[pods[i].ID] {
			continue
		}
		for j, c := range pods[i].Changes {
			if c.Action == string(hsync.ActionRecreate) {
				pods[i].Changes[j].Reasons = []string{notCompared}
			}
		}
	}
}

// notesByPod are the notes of the manifests read (manifest.Sourced.Notes),
// as text, by podKey.
func notesByPod(reads []Read) map[string][]string {
	out := map[string][]string{}
	for _, r := range reads {
		for _, m := range r.Manifests {
			for _, n := range m.Notes {
				k := podKey(r.Name, m.Manifest.ID)
				out[k] = append(out[k], n.Error())
			}
		}
	}
	return out
}

func podKey(source, id string) string { return source + "\x00" + id }

// changes lists a pod plan's container slots, each with the image it
// builds first.
func changes(pp hsync.PodPlan) []Change {
	out := []Change{}
	for _, c := range pp.Changes {
		a := string(c.Action)
		if c.Action == hsync.ActionNone {
			a = "none"
		}
		cj := Change{Container: c.Container, Action: a, Reasons: append([]string{}, c.Reasons...)}
		if pp.Desired != nil && (c.Action == hsync.ActionCreate || c.Action == hsync.ActionRecreate) {
			for _, mc := range pp.Desired.Manifest.Containers {
				if mc.Name == c.Container && mc.Build != nil {
					cj.Build = mc.Image
				}
			}
		}
		out = append(out, cj)
	}
	return out
}

// host is what a plan reads of one host.
type host struct {
	cfg   *config.Config
	srcs  []sources.Source
	reads []Read
	vopts validate.Options
	env   *hsync.EnvHasher
	opts  Options
	// secretsCompared: the set's encrypted files were decrypted
	// (Options.SecretsKey), their values compared.
	secretsCompared bool
}
