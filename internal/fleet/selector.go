package fleet

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Selector picks hosts by their labels: every pair must match (a label
// the host does not have never matches); the empty selector (`*`) picks
// every host.
type Selector struct {
	pairs map[string]string
}

var (
	keyRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)
	valueRE = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`)
)

// MaxSelectorBytes bounds a selector's text.
const MaxSelectorBytes = 1024

// ParseSelector parses `k=v[,k=v]...` (spaces around the parts are
// allowed) or `*`. Keys and values have the shape of host labels; a key
// given twice is an error.
func ParseSelector(s string) (Selector, error) {
	if len(s) > MaxSelectorBytes {
		return Selector{}, fmt.Errorf("selector of %d bytes is over the limit of %d", len(s), MaxSelectorBytes)
	}
	t := strings.TrimSpace(s)
	if t == "*" {
		return Selector{}, nil
	}
	if t == "" {
		return Selector{}, fmt.Errorf("selector %q: empty (use * for every host)", s)
	}
	sel := Selector{pairs: map[string]string{}}
	for _, part := range strings.Split(t, ",") {
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case !ok:
			return Selector{}, fmt.Errorf("selector %q: %q is not key=value", s, strings.TrimSpace(part))
		case len(k) > 63 || !keyRE.MatchString(k):
			return Selector{}, fmt.Errorf("selector %q: %q is not a label key", s, k)
		case len(v) > 63 || !valueRE.MatchString(v):
			return Selector{}, fmt.Errorf("selector %q: %q is not a label value", s, v)
		}
		if _, dup := sel.pairs[k]; dup {
			return Selector{}, fmt.Errorf("selector %q: key %q given twice", s, k)
		}
		sel.pairs[k] = v
	}
	return sel, nil
}

// Matches reports whether a host with labels is picked.
func (s Selector) Matches(labels map[string]string) bool {
	for k, v := range s.pairs {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// String is the selector as ParseSelector takes it, keys sorted.
func (s Selector) String() string {
	if len(s.pairs) == 0 {
		return "*"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s.pairs)) {
		parts = append(parts, k+"="+s.pairs[k])
	}
	return strings.Join(parts, ",")
}
