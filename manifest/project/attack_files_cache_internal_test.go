package project

// Attack on the render cache's byte bound (outside review). A failing test
// is a finding.

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// A project at its documented bound mounts MaxBytes (40 MiB) of files; the
// helper's answer carries them base64 (4/3), some 53 MiB, while the cache
// keeps 64 MiB (cacheBytes = maxResponse). Two such projects on one host
// evict each other on every read: each read of a local folder source runs
// the helper for both again (and a third small project is evicted with
// them), which the cache exists to avoid.
func TestAttackFilesCacheTwoLargeProjectsThrash(t *testing.T) {
	answer := MaxBytes*4/3 + 64<<10 // base64 of the files, and the rest
	if answer > maxResponse {
		t.Fatalf("a project at its bounds (%d bytes of answer) is over the helper's answer bound %d", answer, maxResponse)
	}
	var r Renderer
	a, b := [32]byte{1}, [32]byte{2}
	misses := 0
	for range 3 { // three reads of the source: a, then b
		for _, k := range [][32]byte{a, b} {
			if _, ok := r.cached(k); !ok {
				misses++
				r.store(k, frozenResponse{}, answer)
			}
		}
	}
	if misses > 2 {
		t.Errorf("two projects at the documented bound (%d MiB of files, %d MiB answers): %d helper runs in 3 reads, want 2 (cache of %d MiB)", manifest.MaxSize*4>>20, answer>>20, misses, cacheBytes>>20)
	}
}
