package compose

import (
	"sort"
	"strings"

	"github.com/hostlet/hostlet/manifest"
)

// minSecret is the shortest value taken out of errors: shorter ones would
// take words out of every message, and guard nothing.
const minSecret = 4

// scrubber replaces the values of the project's interpolation
// environment (.env, the host's compose.env) wherever an error's detail
// quotes them: only those reach other keys, whose parsers quote what they
// cannot read. In a field path only an environment or label key that is
// such a value (environment: ["${SECRET}"]) is replaced.
type scrubber struct {
	r      *strings.Replacer
	values map[string]bool
}

func newScrubber(env map[string]string) scrubber {
	seen := map[string]bool{}
	for _, v := range env {
		seen[v] = true
	}
	var values []string
	for v := range seen {
		if len(v) >= minSecret {
			values = append(values, v)
		}
	}
	// Longest first, so that a value holding another is replaced whole.
	sort.Slice(values, func(i, j int) bool {
		return len(values[i]) > len(values[j]) || (len(values[i]) == len(values[j]) && values[i] < values[j])
	})
	pairs := make([]string, 0, 2*len(values))
	for _, v := range values {
		pairs = append(pairs, v, "<value hidden>")
	}
	set := make(map[string]bool, len(values))
	for _, v := range values {
		set[v] = true
	}
	return scrubber{r: strings.NewReplacer(pairs...), values: set}
}

func (s scrubber) scrub(e *manifest.Error) {
	e.Detail = s.r.Replace(e.Detail)
	parts := strings.Split(e.Field, ".")
	for i := 1; i < len(parts); i++ {
		// A map's key (environment: ["${SECRET}"]); never a service's
		// name, which a value may well equal (POSTGRES_USER=postgres).
		if (parts[i-1] == "environment" || parts[i-1] == "labels") && s.values[parts[i]] {
			parts[i] = "<value hidden>"
		}
	}
	e.Field = strings.Join(parts, ".")
}
