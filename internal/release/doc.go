// Package release is the fleet release engine behind `hostlet publish`:
// it renders every host's `via: etcd` git sources at a commit (through
// internal/hostplan, as `hostlet diff --against ref:REV` reads them),
// splits the hosts into waves by their labels (fleet.Assign), writes each
// wave's changed sets to etcd in as few transactions as etcd's limits
// allow, each key guarded by the revision it was read at, and waits for
// the wave's hosts to report the commit with their pods' rollouts
// Complete before the next wave. A host that rolls back, fails a pod of
// the release or stays silent past the wave's timeout halts the release;
// the release record (fleet.Release) says why, and a halted release is
// resumed or aborted (the last complete release before it published
// again) rather than published again as it is.
//
// What internal/fleet holds (keys, the published set's encoding, the
// release record's type, selectors and waves) is shared with the hosts
// and the fleet view; this package is the one writer of releases. Time is
// read through an injected clock.Clock (the wave timeout, retries and
// the record's times); each etcd request is bounded by a context deadline
// on the real clock.
//
// Cost: one Get per host and source before anything is written, one
// transaction per 128 keys or 1 MiB of a wave (a batch of
// --max-unavailable), and one list plus one watch of the status keys per
// wave while it waits: no polling.
package release
