// Package sources turns configured manifest sources into atomic updates: the
// whole set of manifests a source holds now, with a revision. It holds the
// file source and the reading of manifest trees shared by every source that
// reads files (file, git, and CLI --source folders).
package sources
