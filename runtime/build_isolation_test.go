package runtime_test

// What one build leaves where others can see it (issue 15), on the real
// engine: a secret build arg is hidden whole from a failure's text, a
// removed built image leaves no build cache behind, and no build reads
// another's cache mount.

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	scrub "github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	hruntime "github.com/hostlet/hostlet/runtime"
)

func builderRuntime(t *testing.T, builder string) *hruntime.Docker {
	t.Helper()
	d, err := hruntime.New(testCtx(t), "", dockertest.Instance(t), dockertest.Logger(t), hruntime.WithBuilder(builder))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestBuildFailureHidesALongArgWhole: a build arg is scrubbed from the
// failure's text only where it appears whole, and the log's lines and the
// error are cut to 300 bytes (runtime/build.go readBuildStream,
// sync/build.go): cut BEFORE the scrub, a long secret (a JWT, a PAT) that
// an error or a step prints was shown up to the cut.
func TestBuildFailureHidesALongArgWhole(t *testing.T) {
	for _, builder := range []string{"1", "2"} {
		t.Run("builder-"+builder, func(t *testing.T) {
			d := builderRuntime(t, builder)
			raw := make([]byte, 200)
			rand.Read(raw)
			token := "tok" + hex.EncodeToString(raw) // 403 bytes
			ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Minute)
			defer cancel()
			_, err := d.Build(ctx, hruntime.BuildSpec{
				Tags: []string{"hostlet-build/" + d.Instance() + "-leak:" + builder}, Pod: "leak", Dockerfile: "Dockerfile",
				Recipe:  "FROM scratch\nARG TOKEN\nCOPY ${TOKEN} /x\n",
				Args:    map[string]string{"TOKEN": token},
				Context: contextTar(map[string]string{"Dockerfile": "FROM scratch\nARG TOKEN\nCOPY ${TOKEN} /x\n"}),
			})
			if err == nil {
				t.Fatal("the build did not fail")
			}
			shown := scrub.Values(err, token).Error() // what sync/build.go keeps
			for i := 0; i+24 <= len(token); i += 24 {
				if strings.Contains(shown, token[i:i+24]) {
					t.Errorf("the scrubbed failure still shows the arg's bytes %d..%d (%q):\n%s", i, i+24, token[i:i+24], shown)
					break
				}
			}
		})
	}
}

// TestRemovedBuiltImageLeavesNoBuildCache: what pruneBuilt does (remove
// the image) must not leave the build's bytes behind. BuildKit's cache
// outlives the image (and Debian's 20.10 does not collect it: no
// builder.gc), which is why hostlet builds with the engine's default
// builder: here the classic one, whose intermediate images go with the
// image (removed with its untagged parents), and which makes no BuildKit
// cache record.
func TestRemovedBuiltImageLeavesNoBuildCache(t *testing.T) {
	d := builderRuntime(t, "")
	cli := dockertest.Client(t)
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Minute)
	defer cancel()
	cacheIDs := func() map[string]int64 {
		du, err := cli.DiskUsage(ctx, types.DiskUsageOptions{Types: []types.DiskUsageObject{types.BuildCacheObject}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, c := range du.BuildCache {
			out[c.ID] = c.Size
		}
		return out
	}
	images := func() map[string]bool {
		list, err := cli.ImageList(ctx, image.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, im := range list {
			out[im.ID] = true
		}
		return out
	}
	before, imagesBefore := cacheIDs(), images()
	blob := make([]byte, 6<<20)
	rand.Read(blob)
	tag := "hostlet-build/" + d.Instance() + "-cache:1"
	if _, err := d.Build(ctx, hruntime.BuildSpec{
		Tags: []string{tag}, Pod: "cache", Dockerfile: "Dockerfile", Recipe: "FROM scratch\nCOPY blob /blob\nENV A=1\n",
		Context: contextTar(map[string]string{"Dockerfile": "FROM scratch\nCOPY blob /blob\nENV A=1\n", "blob": string(blob)}),
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.RemoveImage(ctx, tag); err != nil {
		t.Fatal(err)
	}
	var left int64
	var ids []string
	for id, size := range cacheIDs() {
		if _, ok := before[id]; !ok {
			left += size
			ids = append(ids, id)
		}
	}
	t.Cleanup(func() {
		for _, id := range ids {
			_, _ = cli.BuildCachePrune(context.Background(), build.CachePruneOptions{All: true, Filters: filters.NewArgs(filters.Arg("id", id))})
		}
	})
	if left >= 6<<20 {
		t.Errorf("after the built image was removed, %d new build cache records still hold %.1f MiB (the 6 MiB context file among them)", len(ids), float64(left)/(1<<20))
	}
	for id := range images() {
		if !imagesBefore[id] {
			t.Errorf("image %s (an intermediate image of the build?) is left after the built image was removed", id)
		}
	}
}

// cacheHelper is a static binary: "write PATH TEXT" writes a file,
// "show PATH" prints one.
const cacheHelper = `package main

import (
	"fmt"
	"os"
)

func main() {
	switch os.Args[1] {
	case "write":
		if err := os.WriteFile(os.Args[2], []byte(os.Args[3]), 0o600); err != nil {
			panic(err)
		}
	case "show":
		b, err := os.ReadFile(os.Args[2])
		if err != nil {
			panic(err)
		}
		fmt.Printf("stolen: %s\n", b)
	}
}
`

// helperTar is a context of the helper (executable) and a Dockerfile.
func helperTar(helper []byte, dockerfile string) func(io.Writer) error {
	return func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for _, f := range []struct {
			name string
			mode int64
			data []byte
		}{{"h", 0o755, helper}, {"Dockerfile", 0o644, []byte(dockerfile)}} {
			if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := tw.Write(f.data); err != nil {
				return err
			}
		}
		return tw.Close()
	}
}

func buildCacheHelper(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module helper\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(cacheHelper), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", "h", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goruntime.GOARCH, "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build helper: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "h"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBuildCacheMountNotSharedAcrossPods: BuildKit lets any Dockerfile
// mount a cache by id (RUN --mount=type=cache,id=...), and such caches are
// the ENGINE's, shared by every build: a pod's build (here of another
// hostlet instance) would read what another pod's build left in a cache it
// uses (a Go module or npm cache with private packages and tokens), and
// could write into it what the other build will compile next, when
// hostlet's Dockerfile check let every --mount through.
//
// Kept: the Dockerfile hostlet sends has no cache mount (manifest/buildctx
// drops them: a cache mount only saves work), a RUN flag of any other
// kind is refused, and the engine's default builder here (the classic
// one) knows no mounts at all.
func TestBuildCacheMountNotSharedAcrossPods(t *testing.T) {
	for _, df := range []string{"FROM scratch\nRUN --mount=type=cache,target=/cache,id=x [\"/h\"]\n"} {
		c := manifest.Container{Name: "app", Build: &manifest.Build{Context: "."}}
		f := buildctx.NewListFolder([]string{"Dockerfile"}, "", func(string) ([]byte, error) { return []byte(df), nil }, nil)
		if err := buildctx.Resolve("mallory", &c, ".", f); err != nil || strings.Contains(c.Build.Recipe, "--mount") {
			t.Errorf("the Dockerfile sent keeps its cache mount (%v):\n%s", err, c.Build.Recipe)
		}
	}
	helper := buildCacheHelper(t)
	victim := builderRuntime(t, "")
	mallory := builderRuntime(t, "")
	cli := dockertest.Client(t)
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Minute)
	defer cancel()
	du, err := cli.DiskUsage(ctx, types.DiskUsageOptions{Types: []types.DiskUsageObject{types.BuildCacheObject}})
	if err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for _, c := range du.BuildCache {
		before[c.ID] = true
	}
	t.Cleanup(func() {
		du, err := cli.DiskUsage(context.Background(), types.DiskUsageOptions{Types: []types.DiskUsageObject{types.BuildCacheObject}})
		if err != nil {
			return
		}
		for _, c := range du.BuildCache {
			if !before[c.ID] {
				_, _ = cli.BuildCachePrune(context.Background(), build.CachePruneOptions{All: true, Filters: filters.NewArgs(filters.Arg("id", c.ID))})
			}
		}
	})
	id := "gomod-" + victim.Instance()
	secret := "victim-private-token-" + victim.Instance()
	write := "FROM scratch\nCOPY h /h\nRUN --mount=type=cache,target=/cache,id=" + id + " [\"/h\", \"write\", \"/cache/creds\", \"" + secret + "\"]\n"
	if res, err := victim.Build(ctx, hruntime.BuildSpec{
		Tags: []string{"hostlet-build/" + victim.Instance() + "-app:1"}, Pod: "victim", Dockerfile: "Dockerfile", Recipe: write,
		Context: helperTar(helper, write),
	}); err != nil {
		t.Logf("victim's build: %v %q", err, res.Log)
	}
	show := "FROM scratch\nCOPY h /h\nRUN --mount=type=cache,target=/cache,id=" + id + " [\"/h\", \"show\", \"/cache/creds\"]\n"
	res, err := mallory.Build(ctx, hruntime.BuildSpec{
		Tags: []string{"hostlet-build/" + mallory.Instance() + "-thief:1"}, Pod: "mallory", Dockerfile: "Dockerfile", Recipe: show,
		Context: helperTar(helper, show),
	})
	t.Logf("mallory's build: %v", err)
	if strings.Contains(strings.Join(res.Log, "\n"), secret) {
		t.Errorf("pod mallory of instance %s read what pod victim of instance %s left in a build cache mount:\n%s", mallory.Instance(), victim.Instance(), strings.Join(res.Log, "\n"))
	}
}
