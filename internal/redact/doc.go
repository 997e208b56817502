// Package redact is the one place that hides the credentials of URLs:
// every log line, error, status document, event and command output that
// names a configured URL shows it through URL (or scrubs a message with
// Text), so that a token in a URL's user name (https://TOKEN@host/repo.git,
// GitHub's style) is hidden as well as a password. Split takes the
// credentials out of a URL for the callers that must send them (as HTTP
// basic auth), so that the URL they keep, use and store carries none. It
// costs nothing but string scans; it holds no state.
package redact
