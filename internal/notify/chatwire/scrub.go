package chatwire

import (
	"errors"
	"net/url"
	"regexp"
	"strings"

	"github.com/hostlet/hostlet/internal/redact"
)

// Scrub returns err without the secrets of raw, the target's URL: the
// url.Error wrapping that quotes the request's URL is taken off, every
// part of raw that may be a token (user, password, path segments, query
// values, fragment, the host of a chat URL) is replaced by REDACTED, and
// any URL left in the text is cut to its scheme and host. errors.Is and As
// still see err.
func Scrub(err error, raw string) error {
	if err == nil {
		return nil
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		err = ue.Err
	}
	return redact.Values(&cut{err: err}, secretParts(raw)...)
}

// secretParts are raw and the parts of it that may hold a token.
func secretParts(raw string) []string {
	parts := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return parts
	}
	if u.User != nil {
		parts = append(parts, u.User.Username())
		if p, ok := u.User.Password(); ok {
			parts = append(parts, p)
		}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		// A chat URL's host is often a token or an ID (slack://a/b/c).
		parts = append(parts, u.Host, u.Hostname())
	}
	parts = append(parts, strings.Split(u.Path, "/")...)
	for _, vs := range u.Query() {
		parts = append(parts, vs...)
	}
	parts = append(parts, u.RawQuery, u.Fragment)
	return parts
}

// urlInText finds URLs in an error's text; cutURLs keeps their scheme and
// host.
var urlInText = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://[^/?#\s"'<>]*)[^\s"'<>]*`)

// cut is err with every URL in its text cut to its scheme and host.
type cut struct{ err error }

func (c *cut) Error() string {
	return urlInText.ReplaceAllStringFunc(c.err.Error(), func(m string) string {
		sub := urlInText.FindStringSubmatch(m)
		if len(sub) < 2 || sub[1] == m {
			return m
		}
		return sub[1] + "/…"
	})
}

func (c *cut) Unwrap() error { return c.err }
