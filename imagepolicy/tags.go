package imagepolicy

import (
	"cmp"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/Masterminds/semver/v3"
)

// maxParts is the most numbers a version of a tag has (1.2.3.4).
const maxParts = 4

// versionText is a tag read as a version: an optional v, one to four
// numbers, then an optional -suffix.
var versionText = regexp.MustCompile(`^(v?)([0-9]{1,9}(?:\.[0-9]{1,9}){0,3})(-[0-9A-Za-z][0-9A-Za-z._-]*)?$`)

// preRelease is the start of a suffix that marks a prerelease (rc.1,
// beta2, alpha-3); any other suffix (-alpine, -bookworm) is a variant.
var preRelease = regexp.MustCompile(`^-((?i:alpha|beta|rc|preview|pre|dev|canary|next)(?:[.-]?[0-9]+)*)`)

// version is a tag read as a version, with its shape: precision (how
// many numbers), a leading v, and a variant suffix.
type version struct {
	tag    string
	prefix string
	nums   []uint64
	// pre is the prerelease ("rc.1"), "" for a release.
	pre string
	// variant is the rest of the suffix ("-alpine"): only tags of the
	// same variant are candidates.
	variant string
	// outside is the part of the tag outside a filter's version group,
	// for the shape of a filtered tag.
	outside string
}

// parse reads tag as a version under c's filter; ok is false when the
// tag is not one (it fails the filter or is no version).
func (c *Compiled) parse(tag string) (version, bool) {
	text, outside := tag, ""
	if c.filter != nil {
		m := c.filter.FindStringSubmatchIndex(tag)
		if m == nil {
			return version{}, false
		}
		if c.versionGroup >= 0 {
			s, e := m[2*c.versionGroup], m[2*c.versionGroup+1]
			if s < 0 {
				return version{}, false
			}
			text, outside = tag[s:e], tag[:s]+"\x00"+tag[e:]
		}
	}
	v, ok := readVersion(text)
	v.tag, v.outside = tag, outside
	return v, ok
}

func readVersion(text string) (version, bool) {
	m := versionText.FindStringSubmatch(text)
	if m == nil {
		return version{}, false
	}
	v := version{prefix: m[1]}
	for p := range strings.SplitSeq(m[2], ".") {
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil || len(p) > 1 && p[0] == '0' {
			// 01.5.0 is no version: it would order as 1.5.0.
			return version{}, false
		}
		v.nums = append(v.nums, n)
	}
	suffix := m[3]
	if pm := preRelease.FindStringSubmatch(suffix); pm != nil && !startsWithLetter(suffix[len(pm[0]):]) {
		v.pre, suffix = pm[1], suffix[len(pm[0]):]
	}
	v.variant = suffix
	return v, true
}

// startsWithLetter: a prerelease word runs on (-prerelease-x is one, but
// -pretty is a variant).
func startsWithLetter(s string) bool {
	return s != "" && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
}

// sameShape reports whether w is written as v is: the same precision,
// prefix, variant and, under a filter, the same text around the version.
func (v version) sameShape(w version) bool {
	return len(v.nums) == len(w.nums) && v.prefix == w.prefix && v.variant == w.variant && v.outside == w.outside
}

// shapeDiff says how w's shape differs from v's ("" when it does not).
func (v version) shapeDiff(w version) string {
	switch {
	case len(v.nums) != len(w.nums):
		return "written with " + strconv.Itoa(len(w.nums)) + " numbers, not " + strconv.Itoa(len(v.nums))
	case v.prefix != w.prefix:
		return "another prefix"
	case v.variant != w.variant:
		if w.variant == "" {
			return "no variant suffix"
		}
		return "another variant (" + w.variant + ")"
	case v.outside != w.outside:
		return "another text around the version"
	}
	return ""
}

// compare orders versions by their numbers (a missing one is 0), then a
// release after its prereleases, prereleases by semver's rules.
func compare(a, b version) int {
	for i := range maxParts {
		if c := cmp.Compare(part(a.nums, i), part(b.nums, i)); c != 0 {
			return c
		}
	}
	switch {
	case a.pre == b.pre:
		return 0
	case a.pre == "":
		return 1
	case b.pre == "":
		return -1
	}
	as, aok := a.semverPre()
	bs, bok := b.semverPre()
	if !aok || !bok {
		return strings.Compare(a.pre, b.pre)
	}
	return as.Compare(bs)
}

func part(nums []uint64, i int) uint64 {
	if i < len(nums) {
		return nums[i]
	}
	return 0
}

// semver is v as a semantic version (its first three numbers and its
// prerelease) for a constraint.
func (v version) semver() *semver.Version {
	sv, _ := v.semverPre()
	return sv
}

// semverPre is semver, and whether its prerelease could be written as
// semver's (else it is left out).
func (v version) semverPre() (*semver.Version, bool) {
	sv := semver.New(part(v.nums, 0), part(v.nums, 1), part(v.nums, 2), "", "")
	if v.pre == "" {
		return sv, true
	}
	p, err := sv.SetPrerelease(semverPre(v.pre))
	if err != nil {
		return sv, false
	}
	return &p, true
}

// semverPre writes a prerelease as semver accepts it: beta2 and beta-2
// as beta.2, so that beta.10 orders after beta.9.
func semverPre(pre string) string {
	i := strings.IndexFunc(pre, func(r rune) bool { return r >= '0' && r <= '9' })
	if i <= 0 {
		return pre
	}
	word := strings.TrimRight(pre[:i], ".-")
	ids := strings.Split(strings.TrimLeft(strings.ReplaceAll(pre[i:], "-", "."), "."), ".")
	for j, id := range ids {
		// beta01 as beta.1: semver refuses leading zeros.
		if t := strings.TrimLeft(id, "0"); t != id {
			ids[j] = cmp.Or(t, "0")
		}
	}
	return word + "." + strings.Join(ids, ".")
}

// newestFirst sorts versions newest first; of equal versions, those
// shaped as cur first (1.5 before 1.5.0 for a current 1.4), then by tag.
func newestFirst(vs []version, cur version) {
	slices.SortFunc(vs, func(a, b version) int {
		if c := compare(b, a); c != 0 {
			return c
		}
		if as, bs := cur.sameShape(a), cur.sameShape(b); as != bs {
			if as {
				return -1
			}
			return 1
		}
		return strings.Compare(a.tag, b.tag)
	})
}
