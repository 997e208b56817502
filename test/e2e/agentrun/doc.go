// Package agentrun holds the end-to-end tests of hostlet run in the test's
// own process (internal/agent.Run, through agenttest) against the real
// Docker engine: sources, compose projects, builds, rollouts, the status
// document, the state folder, fleet releases over etcd, hidden values, the
// memory bounds and the goroutines left behind. Each test runs under its own
// instance label; TestMain (dockertest.Main) removes what the tests built.
package agentrun
