package manifest

// Snapshot is one atomic read of a source: every manifest it holds now, in
// the source's own order (its paths as listed, then file path, then
// document index). Every reader of every source type returns it, and the
// desired-state computation takes one per source.
type Snapshot struct {
	// Name is the source's name; Type its type (git, file, ...).
	Name string
	Type string
	// Revision identifies the content: a git commit, an HTTP ETag or body
	// hash, an etcd mod revision, a file-tree hash.
	Revision string
	// Files is how many files (keys, bodies) were read.
	Files     int
	Manifests []Sourced
	// Plain names each file of the source read (a file or git source's
	// manifest files and project files) that is not wholly encrypted with
	// SOPS, and why: for validate --require-encrypted. Never saved.
	Plain map[string]string `json:"-"`
}
