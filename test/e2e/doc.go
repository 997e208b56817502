// Package e2e holds end-to-end tests of the hostlet binary: each test
// builds a config and manifests in a temporary folder, runs `hostlet run`
// as a subprocess against the real Docker engine under its own instance
// label, and checks what the engine and the HTTP API show.
package e2e
