package compose

import (
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/manifest"
)

// minSecret is the shortest value taken out of an error's text wherever
// it occurs: shorter ones would take words out of every message. A
// shorter value is still never quoted (scrub hides a quoted piece of it).
const minSecret = 4

// scrubber takes the project's values out of its errors: the values of
// its interpolation environment (.env, the host's compose.env), what
// interpolation made of them, and the values it took. Translation quotes
// every value it shows (%q): a quoted text that may show one of them is
// replaced whole, however short; then every one at least minSecret bytes
// long is replaced wherever it occurs. In a field path a map's key (an
// environment variable's, a label's, a sysctl's) that may be such a value
// (environment: ["${SECRET}=x"]) is replaced.
type scrubber struct {
	h redact.Hider
}

func newScrubber(values []string) scrubber {
	return scrubber{h: redact.NewHider(slices.Concat(values, valueParts(values))...)}
}

// valueParts are the parts, at least minSecret bytes long, of values split
// where compose-go splits a value it parses (a volume's
// "source:target:mode", a list, "key=value", a command line): compose-go
// quotes such a part, unquoted, in its own errors ("refers to undefined
// volume hunter2pw"). A shorter part is not searched for: it would take
// words out of every message ("web").
func valueParts(values []string) []string {
	var out []string
	for _, v := range values {
		parts := strings.FieldsFunc(v, func(r rune) bool {
			return r == ':' || r == ',' || r == '=' || unicode.IsSpace(r)
		})
		if len(parts) < 2 {
			continue
		}
		for _, p := range parts {
			if len(p) >= minSecret {
				out = append(out, p)
			}
		}
	}
	return out
}

func (s scrubber) scrub(e *manifest.Error) {
	e.Detail = s.h.Text(quotedRE.ReplaceAllStringFunc(e.Detail, func(q string) string {
		inner, err := strconv.Unquote(q)
		if err != nil {
			inner = q[1 : len(q)-1]
		}
		if s.h.Covers(inner) {
			return `"` + redact.Hidden + `"`
		}
		return q
	}))
	e.Field = s.field(e.Field)
}

// field is a field path with a map's key hidden where it may be one of
// the project's values: the key is the rest of the path after
// environment, labels, sysctls or annotations (a key may hold dots:
// "s3cret.value" is one key), hidden whole when it, or its first
// dot-separated piece, may show a value. Never a service's name, which a
// value may well equal (POSTGRES_USER=postgres).
func (s scrubber) field(f string) string {
	parts := strings.Split(f, ".")
	first := 1
	if len(parts) > 2 && parts[0] == "services" {
		first = 3 // after services.NAME: a service may be named labels
	}
	for i := first; i < len(parts); i++ {
		switch parts[i-1] {
		case "environment", "labels", "sysctls", "annotations":
			key := strings.Join(parts[i:], ".")
			if s.h.Covers(key) || s.h.Covers(parts[i]) {
				return strings.Join(append(parts[:i:i], redact.Hidden), ".")
			}
			return f
		}
	}
	return f
}
