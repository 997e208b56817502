// Package agent assembles a running hostlet from its configuration: the
// Docker runtime, the infra image, the sources and their merge, the
// reconciler and the HTTP API. `hostlet run` is a thin wrapper around it, and
// end-to-end tests run it the same way.
package agent
