package redact

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Placeholder stands for the whole userinfo of a URL, and for any
// credential scrubbed from a message.
const Placeholder = "REDACTED"

// minScrubLen is the shortest credential Text replaces wherever it occurs
// in a message: shorter ones (a user name such as "git") would mangle the
// message and are hidden where they appear inside URLs.
const minScrubLen = 4

// Hides reports whether Text hides cred wherever it occurs in a message
// (it is at least minScrubLen bytes long). A caller about to quote text
// that an outside party chose, and that may echo a shorter credential,
// leaves that text out instead.
func Hides(cred string) bool { return len(cred) >= minScrubLen }

// authority finds the userinfo of a URL written as scheme://userinfo@host
// anywhere in a text: everything between "://" and the last "@" before the
// host's end (a "/", "?", "#", white space or a quote).
var authority = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/?#\s"'<>@]*@`)

// URL returns raw with its whole userinfo (user name and password)
// replaced by Placeholder: "https://REDACTED@host/repo.git". A string
// without a userinfo is returned as it is; scp-like git addresses
// ("git@host:org/repo") are not URLs and keep their user name, which is
// not a credential.
func URL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		end = i
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		// A password holding an unescaped '/', '?' or '#' ends the
		// authority early: look for the '@' up to the first '/' after it.
		at = unescapedAt(rest)
		if at < 0 {
			return raw
		}
	}
	return scheme + "://" + Placeholder + rest[at:]
}

// unescapedAt finds the '@' of a userinfo whose password holds an
// unescaped '/', '?' or '#' ("https://u:pa/ss@host/x"): the last '@'
// before the first '/' that follows an '@'. It returns -1 when the text
// after "://" has no '@' before a path that holds none.
func unescapedAt(rest string) int {
	at := strings.Index(rest, "@")
	if at < 0 {
		return -1
	}
	colon := strings.Index(rest, ":")
	if colon < 0 || colon > at {
		// No password: an '@' after the host is part of the path.
		return -1
	}
	if end := strings.IndexAny(rest, "/?#"); end > colon && isDigits(rest[colon+1:end]) {
		// host:port/path@x: the '@' is in the path.
		return -1
	}
	if slash := strings.IndexAny(rest[at:], "/?#"); slash >= 0 {
		return strings.LastIndex(rest[:at+slash], "@")
	}
	return strings.LastIndex(rest, "@")
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// URLsIn replaces the userinfo of every URL written in text.
func URLsIn(text string) string {
	if !strings.Contains(text, "@") {
		return text
	}
	return authority.ReplaceAllString(text, "${1}"+Placeholder+"@")
}

// Split takes the credentials out of raw: it returns the URL without a
// userinfo, and the user name and password it held (decoded), with ok
// reporting that it held any. A string that is not a scheme:// URL comes
// back as it is.
func Split(raw string) (bare, user, password string, ok bool) {
	scheme, rest, found := strings.Cut(raw, "://")
	if !found {
		return raw, "", "", false
	}
	red := URL(raw)
	if red == raw {
		return raw, "", "", false
	}
	hostAndPath := strings.TrimPrefix(red, scheme+"://"+Placeholder+"@")
	info := strings.TrimSuffix(rest, hostAndPath)
	info = strings.TrimSuffix(info, "@")
	u, p, _ := strings.Cut(info, ":")
	return scheme + "://" + hostAndPath, unescape(u), unescape(p), true
}

func unescape(s string) string {
	if d, err := url.PathUnescape(s); err == nil {
		return d
	}
	return s
}

// Text hides, in a message, every URL given as it is written there, and
// the credentials those URLs hold in any spelling a library may use for
// them (raw, escaped, quoted), then the userinfo of any other URL in it.
// Use it on errors from libraries that may repeat a URL.
func Text(msg string, rawURLs ...string) string {
	for _, raw := range rawURLs {
		if raw == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, raw, URL(raw))
		_, user, password, ok := Split(raw)
		if !ok {
			continue
		}
		for _, cred := range []string{password, user} {
			for _, form := range spellings(cred) {
				if len(form) >= minScrubLen {
					msg = strings.ReplaceAll(msg, form, Placeholder)
				}
			}
		}
	}
	return URLsIn(msg)
}

// spellings are the forms a credential takes in messages.
func spellings(s string) []string {
	if s == "" {
		return nil
	}
	q := strconv.Quote(s)
	return []string{s, url.PathEscape(s), url.QueryEscape(s), url.User(s).String(), q[1 : len(q)-1]}
}

// Error returns err with its message scrubbed by Text (errors.Is and As
// still see err), or nil for a nil err.
func Error(err error, rawURLs ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := Text(msg, rawURLs...); clean != msg {
		return &scrubbed{msg: clean, err: err}
	}
	return err
}

// Values returns err with every value in its message (secrets: env
// values, log options; in any spelling a library may quote them, each at
// least a few bytes long) replaced by Placeholder, then the userinfo of
// any URL in it hidden; errors.Is and As still see err. nil for a nil
// err.
func Values(err error, values ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	// Longest first: a value inside another is hidden with it.
	vs := slices.Clone(values)
	slices.SortFunc(vs, func(a, b string) int { return len(b) - len(a) })
	for _, v := range vs {
		for _, form := range spellings(v) {
			if len(form) >= minScrubLen {
				clean = strings.ReplaceAll(clean, form, Placeholder)
			}
		}
	}
	if clean = URLsIn(clean); clean != msg {
		return &scrubbed{msg: clean, err: err}
	}
	return err
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }
