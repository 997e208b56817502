// Package sync is hostlet's reconciler. Plan compares the desired pods with
// the containers the engine reports (one list call) and says, per pod and
// container, what to create, recreate, restart or remove and why; it is a
// pure function that `hostlet diff` shares with `hostlet run`. Apply carries
// a plan out with bounded concurrency. Syncer runs plan and apply
// periodically and on engine events, tracks pod phases and restarts, runs
// liveness probes, and serves the status of every pod.
//
// Import it as hsync where the standard library's sync is also needed.
package sync
