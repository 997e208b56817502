package validate

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
)

// hider keeps a manifest's hidden values (manifest.Sourced.Hidden: what
// interpolation made) out of the errors validation builds, by
// construction: an argument of a message that may show one is left out
// (<value hidden>, whatever its verb), and so is a quoted part of an
// argument (an error quoting a path) and a map's key in a field path.
// Values typed in the file itself are shown.
type hider struct{ h redact.Hider }

func hiderOf(ss ...manifest.Sourced) hider {
	var wholes, parts []string
	for _, s := range ss {
		wholes, parts = append(wholes, s.Hidden...), append(parts, s.HiddenParts...)
	}
	return hider{h: redact.NewHider(wholes...).WithParts(parts...)}
}

// hiddenOnly is s's hidden values alone.
func hiddenOnly(s manifest.Sourced) manifest.Sourced {
	return manifest.Sourced{Hidden: s.Hidden, HiddenParts: s.HiddenParts}
}

// excerpt is a value shown by its short excerpt (textcap.Excerpt) in a
// message, and judged by the hider as the whole value.
type excerpt string

func (e excerpt) String() string { return textcap.Excerpt(string(e)) }

// optionsText is a map of options as "k=v" pairs in key order, a value
// that may show a hidden one left out.
func (h hider) optionsText(m map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		v := m[k]
		if h.h.Covers(v) {
			v = redact.Hidden
		}
		parts = append(parts, k+"="+v)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// hiddenArg prints as <value hidden> with any verb.
type hiddenArg struct{}

func (hiddenArg) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redact.Hidden) }

// args returns args with every value that may show a hidden one left out.
func (h hider) args(args []any) []any {
	if h.h.Empty() {
		return args
	}
	out := slices.Clone(args)
	for i, a := range args {
		out[i] = h.arg(a)
	}
	return out
}

func (h hider) arg(a any) any {
	var text string
	switch v := a.(type) {
	case excerpt:
		// Judged by the whole value: a hidden value cut short is one still.
		if h.h.Covers(string(v)) {
			return hiddenArg{}
		}
		return a
	case string:
		text = v
	case binding:
		if h.h.CoversNumber(int64(v.port)) || (v.ip.IsValid() && h.h.Covers(v.ip.String())) {
			return hiddenArg{}
		}
		return a
	case error:
		// A message: what it quotes of a hidden value goes, the rest
		// stays ("<value hidden> is not allowed: ...").
		text = h.quoted(v.Error())
		if h.h.Covers(text) {
			return hiddenArg{}
		}
		return text
	case fmt.Stringer:
		text = v.String()
	case int:
		return h.number(a, int64(v))
	case int64:
		return h.number(a, v)
	case int32:
		return h.number(a, int64(v))
	case uint16:
		return h.number(a, int64(v))
	case uint32:
		return h.number(a, int64(v))
	default:
		return a
	}
	if h.h.Covers(text) {
		return hiddenArg{}
	}
	if quoted := h.quoted(text); quoted != text {
		// A message quoting a hidden value: the rest of it stays.
		return quoted
	}
	return a
}

func (h hider) number(a any, n int64) any {
	if h.h.CoversNumber(n) {
		return hiddenArg{}
	}
	return a
}

// quotedText is a Go-quoted string inside a message.
var quotedText = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// quoted replaces every quoted part of text that may show a hidden value.
func (h hider) quoted(text string) string {
	if !strings.Contains(text, `"`) {
		return text
	}
	return quotedText.ReplaceAllStringFunc(text, func(q string) string {
		inner, err := strconv.Unquote(q)
		if err != nil {
			inner = q[1 : len(q)-1]
		}
		if h.h.Covers(inner) {
			return redact.Hidden
		}
		return q
	})
}

// pieces are the parts of a library's message that quote a value
// ("repository name (Shop/web) must be lowercase").
var pieces = regexp.MustCompile(` ?\([^()]*\)`)

// kind is msg, a library's message about v, with the pieces of v it
// quotes left out when v may show a hidden value: what is wrong, not
// with what.
func (h hider) kind(v, msg string) string {
	if !h.h.Covers(v) {
		return msg
	}
	return h.quoted(pieces.ReplaceAllString(msg, ""))
}

// keyAfter are the maps whose keys a Compose field path names after a dot
// (services.web.environment.KEY).
var keyAfter = map[string]bool{"environment": true, "labels": true, "sysctls": true, "annotations": true}

// field returns a field path with every map key that may be a hidden
// value left out (labels["KEY"], services.web.environment.KEY).
func (h hider) field(f string) string {
	if h.h.Empty() {
		return f
	}
	f = h.quoted(f)
	parts := strings.Split(f, ".")
	for i := 1; i < len(parts); i++ {
		if keyAfter[parts[i-1]] && h.h.Covers(parts[i]) {
			parts[i] = redact.Hidden
		}
	}
	return strings.Join(parts, ".")
}

// errorf is manifest.Errorf with the hidden values left out.
func (h hider) errorf(o manifest.Origin, pod, field, format string, args ...any) *manifest.Error {
	return manifest.Errorf(o, pod, h.field(field), format, h.args(args)...)
}

// Scrub returns errs, errors about s, as they may leave hostlet (status,
// events, logs, notifications, command output): each a copy with every
// hidden value of s (what interpolation made, Sourced.Hidden) at least a
// few bytes long replaced by <value hidden> in its detail. Values typed
// in a committed file are not secret and may be quoted. It is the one
// pass every rejection's reasons go through. A field path is left as it
// is: its keys were left out as it was built, and the rest are the
// author's names (a service named as a value is: POSTGRES_USER=postgres).
func Scrub(s manifest.Sourced, errs []*manifest.Error) []*manifest.Error {
	h := redact.NewHider(s.Hidden...)
	if h.Empty() {
		return errs
	}
	out := make([]*manifest.Error, len(errs))
	for i, e := range errs {
		c := *e
		c.Detail = h.Text(c.Detail)
		out[i] = &c
	}
	return out
}
