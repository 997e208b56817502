package imageupdate

import (
	"context"
	"fmt"
	"strings"

	"github.com/distribution/reference"

	"github.com/hostlet/hostlet/imagepolicy"
	"github.com/hostlet/hostlet/registry"
)

// Registry is what the updater asks of registries (registry.Client).
type Registry interface {
	Tags(ctx context.Context, repo string) (registry.Listing, error)
	Digest(ctx context.Context, ref string) (string, error)
}

// Veto says why a target must not move to tag (a host rolled it back, an
// operator holds the pod), "" when it may.
type Veto func(t Target, tag string) string

// Update is the decision for one target.
type Update struct {
	Target Target `json:"target"`
	// Repository is the image's repository as listed.
	Repository string `json:"repository"`
	// From is the tag it runs, To the tag it moves to ("" when none).
	From string `json:"from"`
	To   string `json:"to,omitempty"`
	// Digest is To's digest when the policy pins digests.
	Digest  string             `json:"digest,omitempty"`
	Skipped []imagepolicy.Skip `json:"skipped,omitempty"`
	// SkippedMore counts the skipped tags not listed.
	SkippedMore int `json:"skippedMore,omitempty"`
	// Capped: the repository had more tags than were read.
	Capped bool   `json:"capped,omitempty"`
	Err    string `json:"error,omitempty"`
}

// Due reports whether the update moves its image.
func (u Update) Due() bool { return u.To != "" && u.Err == "" }

// Decide decides every target: the registry is asked once per
// repository (the client caches), one failing repository fails only
// its targets. Targets whose tag one variable holds move only together.
func Decide(ctx context.Context, reg Registry, targets []Target, veto Veto) []Update {
	reg = &onceRegistry{Registry: reg, listings: map[string]listed{}}
	out := make([]Update, len(targets))
	for i, t := range targets {
		out[i] = decideOne(ctx, reg, t, veto)
	}
	agreeOnVariables(out)
	return out
}

func decideOne(ctx context.Context, reg Registry, t Target, veto Veto) Update {
	u := Update{Target: t}
	named, err := reference.ParseNormalizedNamed(t.Resolved)
	if err != nil {
		u.Err = fmt.Sprintf("image %q: %v", t.Resolved, err)
		return u
	}
	u.Repository = reference.Domain(named) + "/" + reference.Path(named)
	tagged, ok := named.(reference.Tagged)
	if !ok {
		u.Err = fmt.Sprintf("image %q has no tag to move from", t.Resolved)
		return u
	}
	u.From = tagged.Tag()
	c, err := imagepolicy.Compile(t.Policy)
	if err != nil {
		u.Err = err.Error()
		return u
	}
	listing, err := reg.Tags(ctx, u.Repository)
	if err != nil {
		u.Err = err.Error()
		return u
	}
	u.Capped = listing.Capped
	var v imagepolicy.Veto
	if veto != nil {
		v = func(tag string) string { return veto(t, tag) }
	}
	d, err := c.Choose(u.From, listing.Tags, v)
	if err != nil {
		u.Err = err.Error()
		return u
	}
	u.To, u.Skipped, u.SkippedMore = d.Chosen, d.Skipped, d.SkippedMore
	if u.To != "" && c.Pin() == imagepolicy.PinDigest {
		if u.Digest, err = reg.Digest(ctx, u.Repository+":"+u.To); err != nil {
			u.Err = err.Error()
		}
	}
	return u
}

// agreeOnVariables holds back the targets of a variable unless all of
// them move to one tag (a variable used by several images moves only
// when every one of them has the chosen tag).
func agreeOnVariables(us []Update) {
	byVar := map[string][]int{}
	for i, u := range us {
		if u.Target.VarAt != nil && !u.Target.VarAt.Default {
			k := u.Target.VarAt.File + "\x00" + u.Target.Var
			byVar[k] = append(byVar[k], i)
		}
	}
	for _, idx := range byVar {
		if held := us[idx[0]].Target.VarWithoutPolicy; len(held) > 0 {
			holdBack(us, idx, fmt.Sprintf("%s also sets the image of %s, which has no policy", us[idx[0]].Target.Var, strings.Join(held, ", ")))
			continue
		}
		if more := us[idx[0]].Target.VarUses - len(idx); more > 0 {
			holdBack(us, idx, fmt.Sprintf("%s is named in %d more places of the project than the images with a policy (an environment, an override file, .env): they would move too", us[idx[0]].Target.Var, more))
			continue
		}
		to, digest, agree := us[idx[0]].To, us[idx[0]].Digest, true
		for _, i := range idx {
			agree = agree && us[i].Err == "" && us[i].To == to && us[i].Digest == digest
		}
		if agree {
			continue
		}
		var names []string
		for _, i := range idx {
			names = append(names, fmt.Sprintf("%s (%s)", us[i].Target.Pod+"/"+us[i].Target.Container, orNone(us[i].To)))
		}
		holdBack(us, idx, fmt.Sprintf("%s also sets the tag of %s: it moves only when all move to one tag (and one digest)",
			us[idx[0]].Target.Var, strings.Join(names, ", ")))
	}
}

// holdBack keeps the updates idx of us where they are, saying why.
func holdBack(us []Update, idx []int, why string) {
	for _, i := range idx {
		if us[i].To != "" {
			us[i].Skipped = append([]imagepolicy.Skip{{Tag: us[i].To, Reason: why}}, us[i].Skipped...)
			us[i].To, us[i].Digest = "", ""
		}
	}
}

func orNone(tag string) string {
	if tag == "" {
		return "no newer tag"
	}
	return "to " + tag
}

// onceRegistry asks reg for each repository's tags once.
type onceRegistry struct {
	Registry
	listings map[string]listed
}

type listed struct {
	listing registry.Listing
	err     error
}

func (o *onceRegistry) Tags(ctx context.Context, repo string) (registry.Listing, error) {
	l, ok := o.listings[repo]
	if !ok {
		l.listing, l.err = o.Registry.Tags(ctx, repo)
		o.listings[repo] = l
	}
	return l.listing, l.err
}

// CurrentVetoed says why the tag a target has now must not be kept as it
// is (a host rolled it back), "" when nothing says so: check shows it,
// as the tag a repository still names while the hosts run the one before.
func CurrentVetoed(u Update, veto Veto) string {
	if veto == nil || u.From == "" {
		return ""
	}
	return veto(u.Target, u.From)
}
