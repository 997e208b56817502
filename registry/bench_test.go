package registry_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/registrytest"
	"github.com/hostlet/hostlet/registry"
)

// BenchmarkTags10000 lists a repository of 10,000 tags (pages of 1000,
// as a registry answers them) with a new Client each time: the time,
// memory and requests one listing costs.
func BenchmarkTags10000(b *testing.B) {
	const total, page = 10000, 1000
	var requests atomic.Int64
	addr := registrytest.Serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		requests.Add(1)
		last, _ := strconv.Atoi(r.URL.Query().Get("last"))
		end := min(last+page, total)
		if end < total {
			w.Header().Set("Link", fmt.Sprintf(`</v2/shop/many/tags/list?n=%d&last=%d>; rel="next"`, page, end))
		}
		tags := make([]string, 0, end-last)
		for i := last; i < end; i++ {
			tags = append(tags, fmt.Sprintf(`"1.%d.%d"`, i/100, i%100))
		}
		fmt.Fprintf(w, `{"name":"shop/many","tags":[%s]}`, strings.Join(tags, ","))
	}))
	b.Setenv("DOCKER_CONFIG", b.TempDir())
	b.ReportAllocs()
	for b.Loop() {
		c, err := registry.New(registry.Options{MaxTags: total})
		if err != nil {
			b.Fatal(err)
		}
		l, err := c.Tags(b.Context(), addr+"/shop/many")
		if err != nil || len(l.Tags) != total || l.Capped {
			b.Fatalf("%d tags, capped %v, %v", len(l.Tags), l.Capped, err)
		}
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
}
