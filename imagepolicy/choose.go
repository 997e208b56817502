package imagepolicy

import (
	"fmt"
)

// MaxSkipsShown bounds the tags a Decision lists as passed over.
const MaxSkipsShown = 20

// Skip is a tag newer than the one chosen that the policy passed over.
type Skip struct {
	Tag    string `json:"tag"`
	Reason string `json:"reason"`
}

// Decision is what Choose decided for one image.
type Decision struct {
	Current string `json:"current"`
	// Chosen is the tag to move to; "" when nothing newer is allowed.
	Chosen string `json:"chosen,omitempty"`
	// Skipped are the newer tags passed over, newest first, at most
	// MaxSkipsShown; SkippedMore counts the rest.
	Skipped     []Skip `json:"skipped,omitempty"`
	SkippedMore int    `json:"skippedMore,omitempty"`
}

// Veto says why a candidate tag must not be chosen (a host rolled it
// back, a hold), "" when it may.
type Veto func(tag string) string

// Choose picks, among tags, the newest the policy allows that is newer
// than current and not vetoed (veto may be nil), keeping current's
// shape. It fails when current is not a version the policy reads.
func (c *Compiled) Choose(current string, tags []string, veto Veto) (Decision, error) {
	d := Decision{Current: current}
	cur, ok := c.parse(current)
	if !ok {
		return d, fmt.Errorf("the current tag %q is not a version this policy reads", current)
	}
	var newer []version
	for _, t := range tags {
		if v, ok := c.parse(t); ok && compare(v, cur) > 0 {
			newer = append(newer, v)
		}
	}
	newestFirst(newer, cur)
	for _, v := range newer {
		reason := c.refusal(cur, v)
		if reason == "" && veto != nil {
			reason = veto(v.tag)
		}
		if reason == "" {
			d.Chosen = v.tag
			break
		}
		if len(d.Skipped) < MaxSkipsShown {
			d.Skipped = append(d.Skipped, Skip{Tag: v.tag, Reason: reason})
		} else {
			d.SkippedMore++
		}
	}
	return d, nil
}

// refusal says why the policy refuses v as cur's successor, "" when it
// does not.
func (c *Compiled) refusal(cur, v version) string {
	if diff := cur.shapeDiff(v); diff != "" {
		return diff
	}
	if v.pre != "" && !c.policy.AllowPrerelease {
		return "a prerelease (allowPrerelease is false)"
	}
	if c.constraint != nil && !c.constraint.Check(v.semver()) {
		return "outside " + c.policy.Semver
	}
	return ""
}
