package release

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxUnavailable is --max-unavailable: N hosts, or P percent of a wave's.
// The zero value writes a wave at once.
type MaxUnavailable struct {
	n, percent int
}

// ParseMaxUnavailable parses N or P% (N, P at least 1; P at most 100);
// "" is the zero MaxUnavailable.
func ParseMaxUnavailable(s string) (MaxUnavailable, error) {
	if s == "" {
		return MaxUnavailable{}, nil
	}
	num, pct := strings.CutSuffix(s, "%")
	v, err := strconv.Atoi(num)
	switch {
	case err != nil || v < 1:
		return MaxUnavailable{}, fmt.Errorf("--max-unavailable %q: want N or P%% (N, P at least 1)", s)
	case pct && v > 100:
		return MaxUnavailable{}, fmt.Errorf("--max-unavailable %q: over 100%%", s)
	case pct:
		return MaxUnavailable{percent: v}, nil
	}
	return MaxUnavailable{n: v}, nil
}

// Of is how many of a wave of total hosts update at a time: 0 for all.
func (m MaxUnavailable) Of(total int) int {
	if m.percent > 0 {
		return max(1, (total*m.percent+99)/100)
	}
	return m.n
}
