package manifest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"iter"
	"sort"
	"strings"
)

// Bounds of a files volume: its files, and their bytes together.
const (
	MaxFileItems = 1000
	MaxFileBytes = MaxSize
)

// Default modes of materialised files: read-only for everyone, and
// executable too when the source's file is.
const (
	FileMode    = 0o444
	FileModeExe = 0o555
)

// Files are files of a source at its revision (a Compose project's
// relative bind mount, config or secret) that hostlet writes under its
// stateDir, content-addressed and read-only, and bind-mounts: one file
// (a single item with an empty Path), mounted at the mount path, or a
// folder of them. Their content is part of the spec hash and never
// shown. A Files value is immutable once made: copies of a manifest
// share it.
type Files struct {
	// Source names the file or folder in its source ("conf/app.conf"),
	// for reasons and errors.
	Source string `json:"source"`
	// Secret marks the content of a secret (a Compose secret).
	Secret bool       `json:"secret,omitempty"`
	Items  []FileItem `json:"items"`
	// Hash stands for the items' data where a manifest is shown (the
	// status document): a keyed hash of the digest, as env values are
	// shown. Never an input.
	Hash string `json:"hash,omitempty"`

	// digest is set when the value is decoded or made by NewFiles.
	digest string
}

// FileItem is one file of a Files volume.
type FileItem struct {
	// Path is slash-separated and relative to the folder; empty for a
	// single file.
	Path string `json:"path,omitempty"`
	// Data is the content (base64 in JSON and YAML).
	Data []byte `json:"data,omitempty"`
	// Mode is the file's permission bits; write bits are never given
	// (the file is shared and read-only). 0 means FileMode.
	Mode uint32 `json:"mode,omitempty"`
	// Sealed names the manifest's Sealed file whose plaintext this file
	// is; Data is then that file's ciphertext as read, and on the host a
	// token standing for its plaintext (see SecretTokenPrefix). Or, for
	// a key of a Kubernetes Secret encrypted in place, the plaintext of
	// one encrypted value of that file: Data is the value (ENC[...]) or
	// a base64 part of it, and on the host its token, or a base64 part
	// of the token, decoded once revealed (SealedItemValue,
	// SealedItemToken). Set by hostlet's readers only; the file is
	// written to the secrets' tmpfs, never under stateDir.
	Sealed string `json:"sealed,omitempty"`
}

// NewFiles returns a Files value of source and items, its digest made.
func NewFiles(source string, secret bool, items []FileItem) *Files {
	f := &Files{Source: source, Secret: secret, Items: items}
	f.digest = f.computeDigest()
	return f
}

// UnmarshalJSON decodes a Files value and makes its digest once.
func (f *Files) UnmarshalJSON(b []byte) error {
	type plain Files
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = Files(p)
	f.digest = f.computeDigest()
	return nil
}

// Single reports whether f is one file rather than a folder.
func (f *Files) Single() bool { return len(f.Items) == 1 && f.Items[0].Path == "" }

// Size is the bytes of f's files together.
func (f *Files) Size() int {
	n := 0
	for _, it := range f.Items {
		n += len(it.Data)
	}
	return n
}

// ItemMode is the mode a file is written with: Mode without write bits,
// FileMode when unset.
func (it FileItem) ItemMode() uint32 {
	if it.Mode == 0 {
		return FileMode
	}
	return it.Mode & 0o555
}

// Digest is the hex SHA-256 of f's paths, modes and contents, in path
// order: the name of its materialised copy, and its part of the spec
// hash. Source and Secret are not part of it.
func (f *Files) Digest() string {
	if f.digest != "" {
		return f.digest
	}
	return f.computeDigest()
}

func (f *Files) computeDigest() string {
	items := append([]FileItem(nil), f.Items...)
	sort.SliceStable(items, func(a, b int) bool { return items[a].Path < items[b].Path })
	h := sha256.New()
	var n [8]byte
	for _, it := range items {
		for _, field := range [][]byte{[]byte(it.Path), it.Data} {
			binary.BigEndian.PutUint64(n[:], uint64(len(field)))
			h.Write(n[:])
			h.Write(field)
		}
		binary.BigEndian.PutUint32(n[:4], it.ItemMode())
		h.Write(n[:4])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ParentDirs yields the folders of the slash-separated path p, nearest
// first: "a/b/c" gives "a/b" then "a", "/a/b" gives "/a" (never "/"), and
// "c", "/c" and "" give none. It ends by construction: each step cuts p
// at an earlier "/", so there are fewer steps than p has elements, whatever
// p holds (path.Dir, which maps "/" to itself and "x" to ".", needs a stop
// condition that a path from the input can miss).
func ParentDirs(p string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
			if !yield(p[:i]) {
				return
			}
		}
	}
}
