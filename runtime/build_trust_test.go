package runtime_test

// What a build may reach and what it leaves behind (issue 30), on the
// real engine with both of its builders.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/versions"

	"github.com/hostlet/hostlet/internal/imagetar"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// builders are the engine's builders: the classic one and BuildKit (which
// Debian's 20.10 runs through the API).
var builders = []string{"1", "2"}

// lootServer is a service of the host's loopback only (hostlet's GET
// API, a metadata endpoint) that counts the requests it answers.
func lootServer(t *testing.T) (url string, requests func() int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.WriteString(w, "loot: a secret of the host\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL, n.Load
}

// removeImage removes ref when the test ends.
func removeImage(t *testing.T, ref string) {
	t.Helper()
	cli := dockertest.Client(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true})
	})
}

// buildRecipe builds recipe with the context files on d, as tag for pod;
// the image is removed when the test ends.
func buildRecipe(ctx context.Context, t *testing.T, d *hruntime.Docker, tag, pod, recipe string, files map[string]string) (hruntime.BuildResult, error) {
	t.Helper()
	files = maps.Clone(files)
	if files == nil {
		files = map[string]string{}
	}
	files["Dockerfile"] = recipe
	removeImage(t, tag)
	return d.Build(ctx, hruntime.BuildSpec{Tags: []string{tag}, Pod: pod, Dockerfile: "Dockerfile", Recipe: recipe, Context: contextTar(files)})
}

// loadBase loads a base image of cfg (registry-free: written in Go, loaded
// through the API), removed when the test ends.
func loadBase(ctx context.Context, t *testing.T, d *hruntime.Docker, cfg imagetar.Config) string {
	t.Helper()
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	ref := "hostlet-test-base-" + hex.EncodeToString(suffix) + ":1"
	var archive bytes.Buffer
	if err := imagetar.WriteConfig(&archive, ref, []imagetar.File{{Path: "/etc/base", Data: []byte("base\n")}}, cfg); err != nil {
		t.Fatal(err)
	}
	removeImage(t, ref)
	if err := d.LoadImage(ctx, &archive); err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestBuildHeredocTheClassicBuilderReadsAsInstructions: the issue's
// Dockerfile hides `ADD http://127.0.0.1:PORT/loot` in a heredoc's body
// (a context file is literally named `<<CMD`, so the classic builder's
// COPY works). Reading it from a source (what `hostlet validate`, diff and
// run do) refuses it with the line; runtime.Build refuses any heredoc
// before anything is sent on the classic builder, and on BuildKit when
// its Dockerfile frontend does not read heredocs either (Docker 20.10's
// own: before the fix, both builders fetched the URL here). The loopback
// service gets no request either way.
func TestBuildHeredocTheClassicBuilderReadsAsInstructions(t *testing.T) {
	base := dockertest.TestImage(t)
	for _, builder := range builders {
		t.Run("builder-"+builder, func(t *testing.T) {
			d := builderRuntime(t, builder)
			loot, requests := lootServer(t)
			recipe := "FROM " + base + "\nCOPY <<CMD /x\nADD " + loot + "/loot /loot\nCMD\n"
			files := map[string]string{"<<CMD": "a file of the context\n", "Dockerfile": recipe}
			names := slices.Sorted(maps.Keys(files))
			folder := buildctx.NewListFolder(names, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
			c := manifest.Container{Name: "app", Build: &manifest.Build{Context: "."}}
			err := buildctx.Resolve("heredoc", &c, ".", folder)
			if err == nil || !strings.Contains(err.Error(), "line 3 (as the engine's classic builder reads it") {
				t.Errorf("reading the build from its source: %v, want it refused at line 3 as the classic builder reads it", err)
			}

			ctx, cancel := context.WithTimeout(testCtx(t), 3*time.Minute)
			defer cancel()
			res, err := buildRecipe(ctx, t, d, "hostlet-build/"+d.Instance()+"-heredoc:"+builder, "heredoc", recipe, files)
			t.Logf("build: %v (log %q)", err, res.Log)
			sv, verr := dockertest.Client(t).ServerVersion(ctx)
			if verr != nil {
				t.Fatal(verr)
			}
			switch {
			case builder == "1" && (!errors.Is(err, hruntime.ErrBuild) || !strings.Contains(err.Error(), "classic builder does not read heredocs")):
				t.Errorf("the classic builder's build: %v, want ErrBuild saying it does not read heredocs", err)
			case builder == "2" && versions.LessThan(sv.APIVersion, "1.42") && (!errors.Is(err, hruntime.ErrBuild) || !strings.Contains(err.Error(), "frontend (API "+sv.APIVersion+", before Docker 23) does not read heredocs")):
				// Docker 20.10's own BuildKit frontend reads a heredoc's
				// body as instructions too (seen here: it fetched the URL).
				t.Errorf("BuildKit's build on an engine of API %s: %v, want ErrBuild saying its frontend does not read heredocs", sv.APIVersion, err)
			}
			if n := requests(); n != 0 {
				t.Errorf("the build made the engine fetch %s/loot from the host's loopback (%d requests)", loot, n)
			}
		})
	}
}

// TestBuildRefusesBaseImageTriggersThatReachOut: a base image's ONBUILD
// triggers run at the start of a build FROM it; one that ADDs a loopback
// URL is refused before the build (named with the image), whether the
// image is named directly, through an ARG or by a stage; a harmless one
// still runs; a base image carrying hostlet's labels (its step
// containers would too) is refused.
func TestBuildRefusesBaseImageTriggersThatReachOut(t *testing.T) {
	for _, builder := range builders {
		t.Run("builder-"+builder, func(t *testing.T) {
			d := builderRuntime(t, builder)
			ctx, cancel := context.WithTimeout(testCtx(t), 4*time.Minute)
			defer cancel()
			loot, requests := lootServer(t)
			bad := loadBase(ctx, t, d, imagetar.Config{OnBuild: []string{"ENV A=1", "ADD " + loot + "/loot /loot"}})
			good := loadBase(ctx, t, d, imagetar.Config{OnBuild: []string{"ENV TRIGGERED=yes"}})
			labelled := loadBase(ctx, t, d, imagetar.Config{Labels: map[string]string{hruntime.LabelPod: "victim", hruntime.LabelContainer: "app"}})
			tag := func(n string) string { return "hostlet-build/" + d.Instance() + "-base:" + n + "-" + builder }
			for name, tt := range map[string]struct{ recipe, want string }{
				"direct":   {"FROM " + bad + "\nCOPY f /f\n", "ADD " + loot + "/loot /loot"},
				"by arg":   {"ARG BASE=" + bad + "\nFROM ${BASE} AS b\nCOPY f /f\n", bad},
				"by stage": {"FROM " + bad + " AS b\nCOPY f /f\nFROM b\nCOPY f /g\n", bad},
				"labelled": {"FROM " + labelled + "\nCOPY f /f\n", "io.hostlet."},
			} {
				res, err := buildRecipe(ctx, t, d, tag(strings.ReplaceAll(name, " ", "-")), "base", tt.recipe, map[string]string{"f": "x"})
				t.Logf("%s: %v (log %q)", name, err, res.Log)
				if !errors.Is(err, hruntime.ErrBuild) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "base image") {
					t.Errorf("build FROM a base image (%s): %v, want ErrBuild naming the base image and %q", name, err, tt.want)
				}
			}
			if n := requests(); n != 0 {
				t.Errorf("a base image's ONBUILD trigger made the engine fetch %s/loot from the host's loopback (%d requests)", loot, n)
			}
			if res, err := buildRecipe(ctx, t, d, tag("good"), "base", "FROM "+good+"\nCOPY f /f\n", map[string]string{"f": "x"}); err != nil {
				t.Fatalf("build FROM a base with a harmless trigger: %v (log %q)", err, res.Log)
			}
			insp, err := dockertest.Client(t).ImageInspect(ctx, tag("good"))
			if err != nil || !slices.Contains(insp.Config.Env, "TRIGGERED=yes") {
				t.Errorf("the harmless trigger did not run: env %q, %v", insp.Config.Env, err)
			}
		})
	}
}

// legacyBuild builds an image as hostlet did before issue 30 (labelled
// io.hostlet.managed and io.hostlet.instance besides the pod's), removed
// when the test ends.
func legacyBuild(ctx context.Context, t *testing.T, instance, pod, tag string) {
	t.Helper()
	removeImage(t, tag)
	var tarball bytes.Buffer
	if err := contextTar(map[string]string{"Dockerfile": "FROM scratch\nCOPY f /f\n", "f": "old"})(&tarball); err != nil {
		t.Fatal(err)
	}
	resp, err := dockertest.Client(t).ImageBuild(ctx, &tarball, build.ImageBuildOptions{
		Tags: []string{tag}, Dockerfile: "Dockerfile", Version: build.BuilderV1, Remove: true, ForceRemove: true,
		Labels: map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: instance, hruntime.LabelBuildPod: pod},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for dec := json.NewDecoder(resp.Body); ; {
		var m struct{ Error string }
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return
		} else if err != nil || m.Error != "" {
			t.Fatalf("legacy build: %v %s", err, m.Error)
		}
	}
}

// TestBuiltImageCarriesNoOwnershipLabels: a built image carries
// io.hostlet.build.instance and io.hostlet.build.pod only, so that a
// container made from it (an operator's `docker run`, the classic
// builder's step containers of a build FROM it) does not look like
// hostlet's (issue 30, finding 3); ListBuilt still finds it for pruning,
// and finds the images built before (labelled the old way), whose names
// a new build of the pod may take over.
func TestBuiltImageCarriesNoOwnershipLabels(t *testing.T) {
	base := dockertest.TestImage(t)
	for _, builder := range builders {
		t.Run("builder-"+builder, func(t *testing.T) {
			d := builderRuntime(t, builder)
			ctx, cancel := context.WithTimeout(testCtx(t), 3*time.Minute)
			defer cancel()
			old := "hostlet-build/" + d.Instance() + "-app:old"
			named := "hostlet-test-named-" + d.Instance() + ":latest"
			legacyBuild(ctx, t, d.Instance(), "p1", old)
			if err := dockertest.Client(t).ImageTag(ctx, old, named); err != nil {
				t.Fatal(err)
			}
			removeImage(t, named)
			tag := "hostlet-build/" + d.Instance() + "-app:new"
			removeImage(t, tag)
			recipe := "FROM " + base + "\nCOPY f /f\n"
			res, err := d.Build(ctx, hruntime.BuildSpec{
				Tags: []string{tag}, Names: []string{named}, Pod: "p1", Dockerfile: "Dockerfile", Recipe: recipe,
				Context: contextTar(map[string]string{"Dockerfile": recipe, "f": "new"}),
			})
			if err != nil {
				t.Fatalf("build: %v (log %q)", err, res.Log)
			}
			if len(res.Skipped) != 0 {
				t.Errorf("names skipped %q: the pod's build of the previous version holds it, it should move", res.Skipped)
			}
			insp, err := dockertest.Client(t).ImageInspect(ctx, tag)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{hruntime.LabelManaged, hruntime.LabelInstance, hruntime.LabelPod, hruntime.LabelContainer} {
				if v, ok := insp.Config.Labels[k]; ok {
					t.Errorf("the built image carries %s=%q: every container made from it inherits it", k, v)
				}
			}
			for k, want := range map[string]string{hruntime.LabelBuildInstance: d.Instance(), hruntime.LabelBuildPod: "p1"} {
				if got := insp.Config.Labels[k]; got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}
			if n, err := dockertest.Client(t).ImageInspect(ctx, named); err != nil || n.ID != insp.ID {
				t.Errorf("%s is not the new build (%v)", named, err)
			}
			built, err := d.ListBuilt(ctx, "p1")
			var tags []string
			for _, b := range built {
				tags = append(tags, b.Tags...)
			}
			if err != nil || !slices.Contains(tags, tag) || !slices.Contains(tags, old) {
				t.Errorf("ListBuilt = %q, %v, want %s and the previous version's %s (to prune them)", tags, err, tag, old)
			}
			if other, err := d.ListBuilt(ctx, "p2"); err != nil || len(other) != 0 {
				t.Errorf("ListBuilt of another pod = %+v, %v, want none", other, err)
			}
		})
	}
}

// TestBuildRefusesWhatTheParsersReadDifferently: Dockerfiles that
// hostlet's check read one way and the engine another (each made both
// builders here fetch from the host's loopback before the fix): an ADD
// URL with quotes or escapes in it (the builders' shell lexer drops
// them), a `# check=` directive before `# escape=` (hostlet's parser
// knows check and took ` as the escape character; the engine's does
// not, and read the ADD and LABEL hostlet saw as a continued COPY), an
// unknown directive before `# syntax=` (hostlet saw no frontend; the
// engine's BuildKit resolved the one named, from a registry on the
// loopback), and a base image's trigger that ADDs a quoted URL. The
// source read refuses each, and so does runtime.Build, before anything
// is sent: the loopback service gets no request.
func TestBuildRefusesWhatTheParsersReadDifferently(t *testing.T) {
	for _, builder := range builders {
		t.Run("builder-"+builder, func(t *testing.T) {
			d := builderRuntime(t, builder)
			ctx, cancel := context.WithTimeout(testCtx(t), 4*time.Minute)
			defer cancel()
			loot, requests := lootServer(t)
			host := strings.TrimPrefix(loot, "http://")
			quoted := loadBase(ctx, t, d, imagetar.Config{OnBuild: []string{`ADD http:""//` + host + "/trigger /loot"}})
			for _, tt := range []struct{ name, recipe, want string }{
				{"ADD of a URL with quotes", "FROM scratch\nADD http:\"\"//" + host + "/q2 /loot\n", "line 2: ADD http:"},
				{"ADD of a URL with single quotes", "FROM scratch\nADD http:''//" + host + "/q3 /loot\n", "line 2: ADD http:"},
				{"ADD of a URL with escapes", "FROM scratch\nADD http:\\/\\/" + host + "/q1 /loot\n", "line 2: ADD http:"},
				{"a check directive before escape",
					"# check=skip=all\n# escape=`\nFROM scratch\nCOPY a `\nADD " + loot + "/loot /loot\nCOPY a `\nLABEL io.hostlet.pod=victim io.hostlet.container=app\n",
					"line 1: parser directives that Docker's parsers read differently"},
				{"an unknown directive before syntax", "# foo=bar\n# syntax=" + host + "/evil/frontend:1\nFROM scratch\nCOPY a /a\n", "line 1: parser directives that Docker's parsers read differently"},
				{"a base image's trigger with a quoted URL", "FROM " + quoted + "\nCOPY a /a\n", "base image " + quoted},
			} {
				files := map[string]string{"Dockerfile": tt.recipe, "a": "a\n"}
				if !strings.HasPrefix(tt.name, "a base image") {
					folder := buildctx.NewListFolder([]string{"Dockerfile", "a"}, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
					c := manifest.Container{Name: "app", Build: &manifest.Build{Context: "."}}
					if err := buildctx.Resolve("readings", &c, ".", folder); err == nil || !strings.Contains(err.Error(), tt.want) {
						t.Errorf("%s: reading the build from its source: %v, want it refused (%q)", tt.name, err, tt.want)
					}
				}
				tag := "hostlet-build/" + d.Instance() + "-readings:" + strings.ReplaceAll(tt.name, " ", "-")[:20] + "-" + builder
				res, err := buildRecipe(ctx, t, d, strings.ToLower(strings.ReplaceAll(tag, "'", "")), "readings", tt.recipe, files)
				t.Logf("%s: %v (log %q)", tt.name, err, res.Log)
				if !errors.Is(err, hruntime.ErrBuild) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s: build: %v, want ErrBuild containing %q", tt.name, err, tt.want)
				}
			}
			if n := requests(); n != 0 {
				t.Errorf("the builds made the engine reach %s on the host's loopback (%d requests)", loot, n)
			}
		})
	}
}
