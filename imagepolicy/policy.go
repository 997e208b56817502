package imagepolicy

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/Masterminds/semver/v3"

	"github.com/hostlet/hostlet/manifest"
)

// Pin values of a policy.
const (
	PinTag    = "tag"
	PinDigest = "digest"
)

// maxPatternLen bounds a policy's filter and constraint.
const maxPatternLen = 512

// Compiled is a checked policy, ready to judge tags.
type Compiled struct {
	policy     manifest.ImagePolicy
	constraint *semver.Constraints
	filter     *regexp.Regexp
	// versionGroup is the index of the filter's `version` group, -1
	// when it has none (the whole tag is the version).
	versionGroup int
}

// FieldError is a problem with one field of a policy.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// FieldErrors lists the FieldErrors err joins (none for nil).
func FieldErrors(err error) []*FieldError {
	var out []*FieldError
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, FieldErrors(e)...)
		}
		return out
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		out = append(out, fe)
	}
	return out
}

// Compile checks p and prepares it. Its error joins a FieldError (on
// semver, filter or pin) for each problem.
func Compile(p manifest.ImagePolicy) (*Compiled, error) {
	c := &Compiled{policy: p, versionGroup: -1}
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{field, fmt.Sprintf(format, a...)})
	}
	switch {
	case len(p.Semver) > maxPatternLen:
		bad("semver", "longer than %d bytes", maxPatternLen)
	case p.Semver != "":
		cs, err := semver.NewConstraint(p.Semver)
		if err != nil {
			bad("semver", "%q is not a version constraint: %v", p.Semver, err)
			break
		}
		cs.IncludePrerelease = p.AllowPrerelease
		c.constraint = cs
	}
	switch {
	case len(p.Filter) > maxPatternLen:
		bad("filter", "longer than %d bytes", maxPatternLen)
	case p.Filter != "":
		// Checked as written, so the error quotes the user's text; then
		// anchored to match the whole tag, from its parsed form (a \Q
		// without \E would quote the anchor's text).
		parsed, err := syntax.Parse(p.Filter, syntax.Perl)
		if err != nil {
			bad("filter", "%q is not a regular expression: %v", p.Filter, err)
			break
		}
		filter, err := regexp.Compile(`^(?:` + parsed.String() + `)$`)
		if err != nil {
			bad("filter", "%q is not a regular expression: %v", p.Filter, err)
			break
		}
		c.filter = filter
		c.versionGroup = c.filter.SubexpIndex("version")
	}
	if p.Pin != "" && p.Pin != PinTag && p.Pin != PinDigest {
		bad("pin", "%q is not one of tag, digest", p.Pin)
	}
	if p.Semver == "" && p.Filter == "" {
		bad("semver", "a policy needs semver, filter or both")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

// Pin reports how the chosen tag is written: PinTag or PinDigest.
func (c *Compiled) Pin() string {
	if c.policy.Pin == "" {
		return PinTag
	}
	return c.policy.Pin
}
