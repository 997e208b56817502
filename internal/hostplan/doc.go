// Package hostplan is the offline host plan: what one host's config and
// sources make, computed without the host. It reads a host's sources once
// (from their configured places, or from local checkouts and folders),
// builds the report `hostlet validate` prints, computes the desired set
// as `hostlet run` would merge it (sources/desired, with what runs as
// every source's last good set), and the plan `hostlet run --once` would
// apply against the live engine, the host's last report, or the same
// sources at another git revision (`hostlet diff`). `hostlet publish`
// (internal/release) and, later, the image updater read hosts through it.
//
// Nothing here changes a host: sources are read, never written; the
// engine is listed, never called otherwise; saved rollouts and the env
// hash key are read, never created.
//
// Cost: one read of each source (a git source at another revision reads
// its checkout's tree at that commit), one list of the engine or one read
// of the host's status, and the pure merge and plan of sources/desired
// and sync.
package hostplan
