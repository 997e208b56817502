package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	yaml3 "go.yaml.in/yaml/v3"
)

// Bounds of what one input may decode to, checked before it is decoded:
// the memory a decode takes grows with the nodes of the input (a YAML
// node costs a few hundred bytes on its way to a manifest), not with its
// bytes, so a 3 MB file of `- {id: 1}` lines took 260 MiB. See
// docs/reliability.md for how the numbers were chosen.
const (
	// MaxFileManifests bounds the manifests of one file or body (its
	// documents and list items): a host runs tens of pods, a big one a
	// few hundred.
	MaxFileManifests = 1000
	// MaxSourceManifests bounds the manifests of one source (every file,
	// key and body it reads, Compose services included).
	MaxSourceManifests = 5000
	// MaxFileMarks bounds the structure of one file or body: its bytes
	// that can start a YAML or JSON node (':', ',', '-', '?', '[' and
	// '{', counted wherever they are, in strings and comments too). A file
	// holds at most three nodes per mark (a mapping, a key and its value
	// for a ':'), plus one per document. A pod of the examples has 30 to
	// 80; base64 data (files volumes) has none.
	MaxFileMarks = 40_000
	// MaxSourceMarks bounds the structure of a source read as one body
	// (a published fleet set, JSON decoded straight into manifests).
	MaxSourceMarks = 500_000
	// MaxYAMLDocument bounds one YAML document (JSON is not bounded but by
	// MaxSize): the YAML decoder holds a long scalar about three times
	// over while it reads it. A list of manifests over it is split into
	// documents (---) or files, or written as JSON.
	MaxYAMLDocument = 4 << 20
)

// ErrTooManyManifests is returned (wrapped) for a file or a source over
// MaxFileManifests or MaxSourceManifests, and ErrTooComplex for one over
// MaxFileMarks (or whose aliases would expand past the same bound).
var (
	ErrTooManyManifests = errors.New("too many manifests")
	ErrTooComplex       = errors.New("too much structure")
)

// structureMarks are the bytes that can start a YAML or JSON node.
var structureMarks = []byte(":,-?[{")

// Marks counts the bytes of data that can start a node (see
// MaxFileMarks): one pass over the bytes, nothing decoded.
func Marks(data []byte) int {
	n := 0
	for _, c := range structureMarks {
		n += bytes.Count(data, []byte{c})
	}
	return n
}

// CheckStructure returns an error (wrapping ErrTooComplex) when data
// holds more than limit marks: what a decode of it would allocate is
// bounded by its marks, and is not begun past the bound. what names the
// input ("file", "published set").
func CheckStructure(data []byte, limit int, what string) error {
	if n := Marks(data); n > limit {
		return fmt.Errorf("the %s holds %d of the characters that can start a YAML or JSON node (: , - ? [ {), more than the %d allowed: %w; split it into several files", what, n, limit, ErrTooComplex)
	}
	return nil
}

// tooManyInFile is the error of a file that holds more than
// MaxFileManifests manifests; its decode stops there.
func tooManyInFile(origin Origin) *Error {
	return &Error{Origin: origin, Detail: fmt.Sprintf("more than %d manifests in one file (documents and list items): %v; split it into several files", MaxFileManifests, ErrTooManyManifests), Err: ErrTooManyManifests}
}

// TooManyInSource is the error of a source that holds more than
// MaxSourceManifests manifests; reading it stops there.
func TooManyInSource(origin Origin) *Error {
	return &Error{Origin: origin, Detail: fmt.Sprintf("more than %d manifests in one source: %v; split it into several sources", MaxSourceManifests, ErrTooManyManifests), Err: ErrTooManyManifests}
}

// checkAliases returns an error when the document's aliases would expand
// it past MaxAliasNodes nodes: the YAML decoder copies an alias's node
// wherever it is used, so ten lines of anchors can stand for millions of
// nodes. Only a document with both an anchor ('&') and an alias ('*')
// can expand; the others are not parsed here.
func checkAliases(doc []byte) error {
	if bytes.IndexByte(doc, '&') < 0 || bytes.IndexByte(doc, '*') < 0 {
		return nil
	}
	var root yaml3.Node
	if err := yaml3.NewDecoder(bytes.NewReader(doc)).Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		// Not YAML: the decode that follows reports it.
		return nil
	}
	if ExpandedNodes(&root, MaxAliasNodes) > MaxAliasNodes {
		// In the YAML decoder's own words for an expansion it catches.
		return fmt.Errorf("not valid YAML or JSON: document contains excessive aliasing%w", tooComplex{})
	}
	return nil
}

// tooComplex wraps ErrTooComplex without a word of its own.
type tooComplex struct{}

func (tooComplex) Error() string { return "" }
func (tooComplex) Unwrap() error { return ErrTooComplex }

// MaxAliasNodes bounds the nodes a YAML document stands for with its
// aliases expanded (3 nodes per mark at most, see MaxFileMarks). Compose
// files are held to it too, their documents together.
const MaxAliasNodes = 3 * MaxFileMarks

// ExpandedNodes is the nodes of n with every alias replaced by the node it
// names, counted up to just past limit (limit+1: over it). Its work is
// linear in the nodes parsed, however much they expand.
func ExpandedNodes(n *yaml3.Node, limit int) int {
	return expandedNodes(n, map[*yaml3.Node]int{}, limit, 0)
}

// maxAliasDepth bounds the recursion of expandedNodes (the YAML decoder
// refuses nesting deeper than 10000 anyway).
const maxAliasDepth = 10_000

// expandedNodes counts the nodes of n with every alias replaced by the
// node it names, up to just past limit. Each node is counted once
// (memo), so the walk is linear in the nodes parsed, however much they
// expand.
func expandedNodes(n *yaml3.Node, memo map[*yaml3.Node]int, limit, depth int) int {
	if n == nil {
		return 0
	}
	if c, ok := memo[n]; ok {
		return c
	}
	if depth > maxAliasDepth {
		return limit + 1
	}
	memo[n] = limit + 1 // an alias of a node inside itself: refused
	total := 1
	if n.Kind == yaml3.AliasNode {
		total = expandedNodes(n.Alias, memo, limit, depth+1)
	}
	for _, c := range n.Content {
		if total > limit {
			break
		}
		total += expandedNodes(c, memo, limit, depth+1)
	}
	total = min(total, limit+1)
	memo[n] = total
	return total
}

// NodeDepth is how deep n's mappings and lists nest, counted up to limit
// (aliases are not followed: ExpandedNodes bounds their expansion). A
// library whose work on a node grows with its depth is given a document
// only when this is within its bound.
func NodeDepth(n *yaml3.Node, limit int) int {
	deepest := 0
	for _, c := range n.Content {
		if deepest >= limit {
			break
		}
		deepest = max(deepest, NodeDepth(c, limit-1))
	}
	if n.Kind == yaml3.MappingNode || n.Kind == yaml3.SequenceNode {
		return deepest + 1
	}
	return deepest
}
