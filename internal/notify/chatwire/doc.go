// Package chatwire is what hostlet (internal/notify) and its chat helper,
// cmd/hostlet-notify, share: the helper's name, the request hostlet
// writes to the helper's stdin, its bound, the helper's exit statuses,
// and Scrub, which takes a target URL's secrets out of an error (the
// helper's errors, and the webhooks' in internal/notify).
//
// The protocol: hostlet runs the helper with no arguments and an
// environment of proxy and CA settings only (a chat URL carries tokens,
// and a process's argv and environment are readable in /proc), writes
// one JSON Request to its stdin and closes it. The helper exits ExitOK,
// or ExitRefused with one line on stderr (a check's refusal names no part
// of the URL; a send's error is scrubbed), or ExitBadRequest when its
// input is not a request. Its stdout is unused.
//
// Cost: the standard library and internal/redact only, so that hostlet
// imports it without the chat library.
package chatwire
