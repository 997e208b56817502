// Package gitrun holds the end-to-end tests of the git source: hostlet run
// in the test's own process (internal/agent.Run, through agenttest) with a
// git source on a repository the test serves (over file:// and smart HTTP),
// against the real Docker engine.
package gitrun
