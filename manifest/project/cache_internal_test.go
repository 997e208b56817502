package project

import (
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// TestRenderCacheBounds: the cache keeps renders within its number and
// its bytes, the least recently used dropped first, and never one answer
// over its bytes.
func TestRenderCacheBounds(t *testing.T) {
	key := func(i int) [32]byte { return [32]byte{byte(i), byte(i >> 8)} }
	tests := []struct {
		name      string
		sizes     []int
		wantCount int
		wantBytes int
	}{
		{"within", []int{10, 20, 30}, 3, 60},
		{"bytes", []int{cacheBytes / 2, cacheBytes / 2, cacheBytes / 2}, 2, cacheBytes},
		{"one too large", []int{cacheBytes + 1}, 0, 0},
		{"number", make([]int, cacheSize+5), cacheSize, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Renderer
			for i, size := range tt.sizes {
				r.store(key(i), frozenResponse{}, size)
			}
			if n, b := r.cacheStats(); n != tt.wantCount || b != tt.wantBytes {
				t.Errorf("kept %d renders of %d bytes, want %d of %d", n, b, tt.wantCount, tt.wantBytes)
			}
		})
	}
	var r Renderer
	r.store(key(1), frozenResponse{}, cacheBytes/2)
	r.store(key(2), frozenResponse{}, cacheBytes/2)
	r.cached(key(1)) // the most recent now
	r.store(key(3), frozenResponse{}, cacheBytes/2)
	if _, ok := r.cached(key(1)); !ok {
		t.Error("the render used last was dropped")
	}
	if _, ok := r.cached(key(2)); ok {
		t.Error("the least recently used render was kept")
	}
}

// A render is kept by a key that changes with anything of the bundle the
// helper sees, and with nothing else.
func TestBundleKeyChangesWithWhatTheHelperSees(t *testing.T) {
	base := func() Bundle {
		return Bundle{Options: Options{Source: "apps", Dir: "shop", Name: "shop"},
			Files: map[string]File{"compose.yaml": {Data: []byte("services: {}\n")}, "web/demo": {Data: []byte("ab"), Exec: true}}}
	}
	changes := []struct {
		name   string
		change func(*Bundle)
	}{
		{"a file's data", func(b *Bundle) { b.Files["web/demo"] = File{Data: []byte("ac"), Exec: true} }},
		{"a file's exec bit", func(b *Bundle) { b.Files["web/demo"] = File{Data: []byte("ab")} }},
		{"a file's error", func(b *Bundle) { b.Files["web/demo"] = File{Data: []byte("ab"), Exec: true, Err: "too large"} }},
		{"a file's name", func(b *Bundle) {
			b.Files["web/dem"] = File{Data: []byte("oab"), Exec: true}
			delete(b.Files, "web/demo")
		}},
		{"a file more", func(b *Bundle) { b.Files[".env"] = File{} }},
		{"an option", func(b *Bundle) { b.Options.Dir = "shop2" }},
		{"a host setting", func(b *Bundle) { b.Options.Host.Env = map[string]string{"A": "1"} }},
		{"the body", func(b *Bundle) { b.Body = []byte("services: {}\n") }},
	}
	want, err := bundleKey(base())
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := bundleKey(base()); again != want {
		t.Fatal("one bundle, two keys")
	}
	seen := map[[32]byte]string{want: "the bundle"}
	for _, c := range changes {
		b := base()
		c.change(&b)
		got, err := bundleKey(b)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: the key of %s", c.name, prev)
		}
		seen[got] = c.name
	}
}

// TestRenderCacheHoldsTwoProjectsAtTheirBounds: a project at its
// documented bound mounts MaxBytes (40 MiB) of files; the helper's answer
// carries them base64 (4/3), some 53 MiB. Two such projects on one host
// must not evict each other on every read: with a cache of 64 MiB
// (cacheBytes = maxResponse) each read of a local folder source ran the
// helper for both again (and a third small project was evicted with
// them), which the cache exists to avoid.
func TestRenderCacheHoldsTwoProjectsAtTheirBounds(t *testing.T) {
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
