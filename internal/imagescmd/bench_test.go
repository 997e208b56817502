package imagescmd_test

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/registrytest"
)

// BenchmarkCheck100Manifests20Repositories: `images check` of 100
// manifests whose images are in 20 repositories of a real registry (5
// tags each), through a proxy that counts the requests: one listing per
// repository per run, and the run's time.
func BenchmarkCheck100Manifests20Repositories(b *testing.B) {
	reg := registrytest.Start(b, registrytest.Options{})
	cli := dockertest.Client(b)
	tags := []string{"1.4.2", "1.4.3", "1.5.0", "2.0.0", "latest"}
	for r := range 20 {
		reg.Push(b, cli, fmt.Sprintf("shop/svc%02d", r), tags, nil)
	}
	target, _ := url.Parse("http://" + reg.Addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var requests atomic.Int64
	addr := registrytest.Serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	dir := b.TempDir()
	for i := range 100 {
		write(b, dir, fmt.Sprintf("pods/p%03d.yaml", i), fmt.Sprintf(
			"version: v1beta1\nid: p%03d\ncontainers:\n  - name: app\n    image: %s/shop/svc%02d:1.4.2\n    imagePolicy: {semver: \"~1.4\"}\n", i, addr, i%20))
	}
	b.Setenv("DOCKER_CONFIG", b.TempDir())
	requests.Store(0)
	for b.Loop() {
		if out, code := run(b, "check", "--source", "apps="+dir); code != 2 {
			b.Fatalf("check: exit %d\n%s", code, out)
		}
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/op")
}
