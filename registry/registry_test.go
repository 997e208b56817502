package registry_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/registrytest"
	"github.com/hostlet/hostlet/registry"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// The tags the issue names, pushed through the engine; latest is the
// same image as 2.0.0.
var pushedTags = []string{"1.4.2", "1.4.3", "1.5.0", "2.0.0", "2.0.0-rc.1", "1.4.3-alpine", "latest"}

func newClient(t *testing.T, opts registry.Options) *registry.Client {
	t.Helper()
	c, err := registry.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A real registry: every tag listed once however often it is asked, a
// digest by HEAD equal to the one the push reported.
func TestTagsAndDigestsFromARealRegistry(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	digests := reg.Push(t, dockertest.Client(t), "shop/web", pushedTags, map[string]string{"latest": "2.0.0"})
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	c := newClient(t, registry.Options{PageSize: 3})
	repo := reg.Addr + "/shop/web"
	for range 3 {
		l, err := c.Tags(t.Context(), repo)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Sorted(slices.Values(l.Tags)); !slices.Equal(got, slices.Sorted(slices.Values(pushedTags))) || l.Capped {
			t.Fatalf("tags %q (capped %v), want %q", got, l.Capped, pushedTags)
		}
	}
	before, _ := c.Requests()
	for _, tag := range []string{"1.4.3", "latest", "1.4.3"} {
		d, err := c.Digest(t.Context(), repo+":"+tag)
		if err != nil {
			t.Fatal(err)
		}
		if d != digests[tag] {
			t.Errorf("digest of %s = %s, want %s", tag, d, digests[tag])
		}
	}
	if digests["latest"] != digests["2.0.0"] {
		t.Errorf("latest %s and 2.0.0 %s: want one image", digests["latest"], digests["2.0.0"])
	}
	after, _ := c.Requests()
	// Two HEADs (1.4.3 asked twice is answered from the cache).
	if n := after[reg.Addr] - before[reg.Addr]; n != 2 {
		t.Errorf("%d requests for three digests of two tags, want 2", n)
	}
}

// A registry behind a password: refused without credentials, read with
// those of the Docker config DOCKER_CONFIG names.
func TestPasswordRegistryTakesTheDockerConfig(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{User: "ci", Password: "s3cret-pw"})
	reg.Push(t, dockertest.Client(t), "shop/web", []string{"1.4.2", "1.4.3"}, nil)
	repo := reg.Addr + "/shop/web"

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if _, err := newClient(t, registry.Options{}).Tags(t.Context(), repo); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Errorf("tags without credentials: %v, want UNAUTHORIZED", err)
	} else if strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("the error shows the password: %v", err)
	}
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t))
	l, err := newClient(t, registry.Options{}).Tags(t.Context(), repo)
	if err != nil || !slices.Equal(slices.Sorted(slices.Values(l.Tags)), []string{"1.4.2", "1.4.3"}) {
		t.Errorf("tags with the Docker config's credentials: %q, %v", l.Tags, err)
	}
}

// tooManyRequests puts a proxy in front of reg that answers 429 to the
// first n tag listings, asking to wait retryAfter.
func tooManyRequests(t *testing.T, reg *registrytest.Registry, n int32, retryAfter string) string {
	t.Helper()
	target, _ := url.Parse("http://" + reg.Addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var left atomic.Int32
	left.Store(n)
	srv := registrytest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/tags/list") && left.Add(-1) >= 0 {
			w.Header().Set("Retry-After", retryAfter)
			http.Error(w, `{"errors":[{"code":"TOOMANYREQUESTS","message":"slow down"}]}`, http.StatusTooManyRequests)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	return srv
}

// 429 answers are waited out as Retry-After says, within bounds; a wait
// asked beyond MaxRetryAfter fails the listing, and so does a spent
// request budget.
func TestTooManyRequestsIsWaitedOut(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	reg.Push(t, dockertest.Client(t), "shop/web", []string{"1.4.2"}, nil)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	for _, tc := range []struct {
		name       string
		refusals   int32
		retryAfter string
		opts       registry.Options
		wantErr    string
		wantWaits  int
	}{
		{name: "Retry-After in seconds", refusals: 2, retryAfter: "1", wantWaits: 2},
		{name: "Retry-After as a date", refusals: 1, retryAfter: time.Now().Add(time.Second).UTC().Format(http.TimeFormat), wantWaits: 1},
		{name: "no Retry-After: a doubling backoff", refusals: 2, retryAfter: "", opts: registry.Options{MinBackoff: 50 * time.Millisecond}, wantWaits: 2},
		{name: "more refusals than retries", refusals: 5, retryAfter: "0", opts: registry.Options{Retries: 2}, wantErr: "TOOMANYREQUESTS"},
		{name: "a wait beyond the bound", refusals: 1, retryAfter: "3600", wantErr: "more than 1m0s"},
		{name: "the budget spent", refusals: 0, opts: registry.Options{Budget: 1}, wantErr: "budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tooManyRequests(t, reg, tc.refusals, tc.retryAfter)
			c := newClient(t, tc.opts)
			l, err := c.Tags(t.Context(), addr+"/shop/web")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("tags: %v, want an error with %q", err, tc.wantErr)
				}
				if tc.wantErr == "budget" && !errors.Is(err, registry.ErrBudget) {
					t.Errorf("error %v is not ErrBudget", err)
				}
				return
			}
			if err != nil || !slices.Equal(l.Tags, []string{"1.4.2"}) {
				t.Fatalf("tags %q, %v", l.Tags, err)
			}
			if _, waited := c.Requests(); waited[addr] != tc.wantWaits {
				t.Errorf("waited out %d answers, want %d", waited[addr], tc.wantWaits)
			}
		})
	}
}

// A repository with more tags than the cap is read to the cap, over
// several pages, and says it was cut.
func TestTagListingStopsAtTheCap(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	var tags []string
	for i := range 12 {
		tags = append(tags, fmt.Sprintf("1.0.%d", i))
	}
	reg.Push(t, dockertest.Client(t), "shop/many", tags, nil)
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	for _, tc := range []struct {
		max, page  int
		wantTags   int
		wantCapped bool
	}{
		{max: 5, page: 2, wantTags: 5, wantCapped: true},
		{max: 12, page: 5, wantTags: 12},
		{max: 12, page: 12, wantTags: 12},
		{max: 100, page: 5, wantTags: 12},
	} {
		c := newClient(t, registry.Options{MaxTags: tc.max, PageSize: tc.page})
		l, err := c.Tags(t.Context(), reg.Addr+"/shop/many")
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Tags) != tc.wantTags || l.Capped != tc.wantCapped {
			t.Errorf("cap %d, pages of %d: %d tags, capped %v; want %d, %v", tc.max, tc.page, len(l.Tags), l.Capped, tc.wantTags, tc.wantCapped)
		}
	}
}

// A hostile registry: an answer past the size bound, a next page on
// another host, a listing that never ends; each fails its repository.
func TestHostileRegistryAnswersAreBounded(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	huge := registrytest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		fmt.Fprint(w, `{"name":"shop/web","tags":["`)
		chunk := strings.Repeat("a", 1<<16)
		for range 200 {
			fmt.Fprint(w, chunk)
		}
		fmt.Fprint(w, `"]}`)
	}))
	elsewhere := registrytest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		w.Header().Set("Link", `<http://169.254.169.254/v2/shop/web/tags/list?n=1&last=a>; rel="next"`)
		fmt.Fprint(w, `{"name":"shop/web","tags":["1.0.0"]}`)
	}))
	var pages atomic.Int64
	endless := registrytest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		n := pages.Add(1)
		w.Header().Set("Link", fmt.Sprintf(`</v2/shop/web/tags/list?n=1&last=%d>; rel="next"`, n))
		fmt.Fprintf(w, `{"name":"shop/web","tags":["1.0.%d"]}`, n)
	}))
	silent := registrytest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		<-r.Context().Done() // never answers
	}))
	for _, tc := range []struct {
		name, addr, wantErr string
		wantTags            int
		// timeout bounds each request: a second, but where 8 MiB must
		// go through first (a loaded machine, -race).
		timeout time.Duration
	}{
		{name: "an answer over 8 MiB", addr: huge, wantErr: "larger than", timeout: 20 * time.Second},
		{name: "a next page on another host", addr: elsewhere, wantErr: "does not match", timeout: time.Second},
		{name: "an endless listing", addr: endless, wantTags: 50, timeout: time.Second},
		{name: "a registry that never answers", addr: silent, wantErr: "context deadline exceeded", timeout: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			l, err := newClient(t, registry.Options{MaxTags: 50, Timeout: tc.timeout}).Tags(ctx, tc.addr+"/shop/web")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("tags: %v, want an error with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || len(l.Tags) != tc.wantTags || !l.Capped {
				t.Fatalf("%d tags, capped %v, %v; want %d, capped", len(l.Tags), l.Capped, err, tc.wantTags)
			}
		})
	}
}
