// Package project finds and renders Docker Compose projects without
// linking a Compose loader: a project's files are bundled (read through
// the source's own guarded reader) and rendered into pods by the
// hostlet-compose helper (cmd/hostlet-compose, package manifest/compose),
// over pipes: nothing is written to disk, plaintext env values included.
// Keeping compose-go and its JSON-schema compiler out of the agent's
// process keeps the agent's idle memory where it was (docs/performance.md).
package project
