package project

import "testing"

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
				r.store(key(i), Response{}, size)
			}
			if n, b := r.cacheStats(); n != tt.wantCount || b != tt.wantBytes {
				t.Errorf("kept %d renders of %d bytes, want %d of %d", n, b, tt.wantCount, tt.wantBytes)
			}
		})
	}
	var r Renderer
	r.store(key(1), Response{}, cacheBytes/2)
	r.store(key(2), Response{}, cacheBytes/2)
	r.cached(key(1)) // the most recent now
	r.store(key(3), Response{}, cacheBytes/2)
	if _, ok := r.cached(key(1)); !ok {
		t.Error("the render used last was dropped")
	}
	if _, ok := r.cached(key(2)); ok {
		t.Error("the least recently used render was kept")
	}
}
