// Package tree is the one reader of a source's tree of manifest files, over
// io/fs.FS: a folder (the file source, `--source NAME=DIR`) through the
// folder's fs.FS in sources, a git commit through gitsource's. It holds the
// rules both follow: which files are manifests (hidden entries skipped,
// .yaml, .yml and .json only, sorted by path), which folders are Compose
// projects (everything below one is its data, bundled and rendered), how a
// build's context is read, the bound on manifests per source, and the
// revision of what was read.
//
// A tree's fs.FS decides what its links are: the folder's follows a link
// to a manifest file that stays in the folder and refuses any other; the
// git tree's refuses every link. The reader opens every file through the
// tree's fs.FS, never by a path of its own.
package tree
