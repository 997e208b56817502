// Package sources turns configured manifest sources into atomic updates: the
// whole set of manifests a source holds now, with a revision. It holds the
// Source interface (Read once, for `hostlet validate` and `hostlet diff`;
// Run, for `hostlet run`), the file, http, etcd and push sources, and a
// folder as the tree the one manifest tree reader reads (ReadTree; the git
// source hands it a commit's tree). Every read is a manifest.Snapshot.
//
// Beside it: sources/tree is that reader, over io/fs.FS, for every source
// that reads files (file, git, and CLI --source folders);
// sources/configured makes the source of each configured type
// (gitsource's included), the one place that chooses by type;
// sources/desired computes the desired set from the sources' sets, purely.
// The Merger here keeps each source's last good set (admitting each update
// through desired.Admit), merges them with desired.Compute, publishes the
// result for State and persists the sets with a Store, outside the lock
// State takes.
package sources
