// Package e2e holds end-to-end tests of the hostlet binary: each test
// builds a config and manifests in a temporary folder, runs `hostlet run`
// as a subprocess against the real Docker engine under its own instance
// label, and checks what the engine and the HTTP API show.
//
// Its subfolders hold the end-to-end tests that run hostlet in the test's
// own process (internal/agent.Run) against the same engine: test/e2e/agentrun
// (the agent as a whole) and test/e2e/gitrun (the git source).
//
// The CLI's own end-to-end tests (TestFleetPublishE2E, TestNoSecretLeaks)
// stay in cmd/hostlet: they call package main's commands in process, which
// no other package can import.
package e2e
