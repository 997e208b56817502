package redact

import (
	"slices"
	"strconv"
	"strings"
)

// Hidden stands for a value of a manifest (an interpolated Compose value,
// an env value) wherever an error would show it.
const Hidden = "<value hidden>"

// Hider is the one scrubber of manifest values: the values an error about
// a manifest must not show (what .env, the host's compose.env or a secret
// gave it, and its env values), as a set. Errors are built with Covers (a
// value about to be quoted is left out when it may show one of them,
// whatever its length); Text is the last pass over a finished message,
// replacing every value at least a few bytes long in each spelling a
// library may quote it in. A shorter value is not searched for in text: a
// value "1" would take every "1" out of every message; it is kept out
// where the error is built instead. The zero Hider hides nothing.
type Hider struct {
	// lower holds the values in lower case, non-empty, once each.
	lower []string
	// long are the spellings Text looks for, longest first.
	long []string
}

// NewHider returns the hider of values ("" ignored).
func NewHider(values ...string) Hider {
	seen := map[string]bool{}
	var h Hider
	var long []string
	for _, v := range values {
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		if l := strings.ToLower(v); !slices.Contains(h.lower, l) {
			h.lower = append(h.lower, l)
		}
		for _, form := range spellings(v) {
			if len(form) >= minScrubLen && !seen["\x00"+form] {
				seen["\x00"+form] = true
				long = append(long, form)
			}
		}
	}
	// Longest first: a value holding another is replaced whole.
	slices.SortFunc(long, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	h.long = long
	return h
}

// WithParts returns h that also keeps parts out of errors as they are
// built (Covers), without searching for them in text (Text): a part of a
// value (what a parser split off) may be any word.
func (h Hider) WithParts(parts ...string) Hider {
	out := Hider{lower: slices.Clone(h.lower), long: h.long}
	for _, p := range parts {
		if l := strings.ToLower(p); l != "" && !slices.Contains(out.lower, l) {
			out.lower = append(out.lower, l)
		}
	}
	return out
}

// Empty reports whether h hides nothing.
func (h Hider) Empty() bool { return len(h.lower) == 0 }

// Covers reports whether showing v could show a hidden value, letter case
// aside: v is a piece of one (a part a parser split off, any length), or
// v holds one at least a few bytes long (a message quoting it).
func (h Hider) Covers(v string) bool {
	if v == "" || len(h.lower) == 0 {
		return false
	}
	lv := strings.ToLower(v)
	for _, s := range h.lower {
		if strings.Contains(s, lv) || (len(s) >= minScrubLen && strings.Contains(lv, s)) {
			return true
		}
	}
	return false
}

// CoversNumber reports whether showing n could show a hidden value: a
// hidden value is n, or holds n as one of its numbers ("8080:80" holds
// 8080 and 80, not 8).
func (h Hider) CoversNumber(n int64) bool {
	d := strings.TrimLeft(strings.TrimPrefix(strconv.FormatInt(n, 10), "-"), "0")
	notDigit := func(r rune) bool { return r < '0' || r > '9' }
	for _, s := range h.lower {
		for _, tok := range strings.FieldsFunc(s, notDigit) {
			if strings.TrimLeft(tok, "0") == d {
				return true
			}
		}
	}
	return false
}

// Text replaces, in text, every hidden value at least a few bytes long
// (raw, escaped or quoted) by Hidden.
func (h Hider) Text(text string) string {
	if len(h.long) == 0 {
		return text
	}
	// What is hidden already stays as it is (a value "value" must not
	// take a word out of a placeholder).
	parts := strings.Split(text, Hidden)
	for i, p := range parts {
		parts[i] = h.hide(p)
	}
	return strings.Join(parts, Hidden)
}

// hide replaces in p, longest value first, every value it holds by
// Hidden. A value longer than p is never looked for, and each search is
// linear (strings.Index): a huge value costs nothing where it cannot be
// (strings.NewReplacer with one value built a table in time of its length
// squared: a 64 KiB value took seconds, 1 MiB half an hour).
func (h Hider) hide(p string) string { return h.hideFrom(p, 0) }

// hideFrom is hide with the values from h.long[k] on: the longer ones are
// known not to be in p. What comes before a value found holds none of it
// nor any longer one, so the recursion is at most len(h.long) deep.
func (h Hider) hideFrom(p string, k int) string {
	var b strings.Builder
	for k < len(h.long) {
		v := h.long[k]
		i := -1
		if len(v) <= len(p) {
			i = strings.Index(p, v)
		}
		if i < 0 {
			k++
			continue
		}
		b.WriteString(h.hideFrom(p[:i], k+1))
		b.WriteString(Hidden)
		p = p[i+len(v):]
	}
	b.WriteString(p)
	return b.String()
}

// Error returns err with its text through Text, still wrapping err for
// errors.Is and errors.As; err itself when nothing was hidden.
func (h Hider) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := h.Text(msg); clean != msg {
		return &scrubbed{msg: clean, err: err}
	}
	return err
}
