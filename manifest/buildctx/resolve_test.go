package buildctx_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// folder is a context of files by name; names in links are symbolic
// links.
func folder(files map[string]string, links ...string) buildctx.Folder {
	names := slices.Sorted(maps.Keys(files))
	names = append(names, links...)
	slices.Sort(names)
	f := buildctx.NewListFolder(names, "", func(n string) ([]byte, error) {
		if slices.Contains(links, n) {
			return nil, errors.New("a symbolic link")
		}
		return []byte(files[n]), nil
	}, func(n string) bool { return strings.HasSuffix(n, ".sh") })
	if len(links) == 0 {
		return f
	}
	return linkFolder{f, links}
}

type linkFolder struct {
	buildctx.Folder
	links []string
}

func (l linkFolder) ReadDir(name string) ([]buildctx.Entry, error) {
	es, err := l.Folder.ReadDir(name)
	for i := range es {
		if slices.Contains(l.links, strings.TrimPrefix(name+"/"+es[i].Name, "/")) {
			es[i].Link = true
		}
	}
	return es, err
}

func resolve(t *testing.T, b manifest.Build, files map[string]string, links ...string) (manifest.Container, error) {
	t.Helper()
	c := manifest.Container{Name: "web", Image: "example.org/web:dev", Build: &b}
	err := buildctx.Resolve("shop", &c, "app", folder(files, links...))
	return c, err
}

func contextPaths(c manifest.Container) []string {
	var out []string
	for _, it := range c.Build.Files.Items {
		out = append(out, it.Path)
	}
	return out
}

func TestResolve(t *testing.T) {
	const df = "FROM scratch AS base\nCOPY . /\nFROM base AS final\n"
	tests := []struct {
		name    string
		build   manifest.Build
		files   map[string]string
		links   []string
		want    []string // context files
		wantErr string
	}{
		{name: "every file", files: map[string]string{"Dockerfile": df, "main.go": "x", "pkg/a.go": "y"}, want: []string{"Dockerfile", "main.go", "pkg/a.go"}},
		{
			name:  "dockerignore",
			files: map[string]string{"Dockerfile": df, ".dockerignore": "node_modules\n*.md\n!KEEP.md\n", "main.go": "x", "README.md": "r", "KEEP.md": "k", "node_modules/a/b.js": "big"},
			want:  []string{".dockerignore", "Dockerfile", "KEEP.md", "main.go"},
		},
		{
			name:  "a folder ignored but one file in it kept",
			files: map[string]string{"Dockerfile": df, ".dockerignore": "docs\n!docs/keep.txt\n", "docs/a.txt": "a", "docs/keep.txt": "k"},
			want:  []string{".dockerignore", "Dockerfile", "docs/keep.txt"},
		},
		{name: "dockerfile elsewhere", build: manifest.Build{Dockerfile: "build/Dockerfile.prod"}, files: map[string]string{"build/Dockerfile.prod": df}, want: []string{"build/Dockerfile.prod"}},
		{name: "inline", build: manifest.Build{DockerfileInline: df}, files: map[string]string{"main.go": "x"}, want: []string{"main.go"}},
		{name: "target", build: manifest.Build{Target: "base"}, files: map[string]string{"Dockerfile": df}, want: []string{"Dockerfile"}},
		{name: "target in another case", build: manifest.Build{Target: "FINAL"}, files: map[string]string{"Dockerfile": df}, want: []string{"Dockerfile"}},
		{name: "no Dockerfile", files: map[string]string{"main.go": "x"}, wantErr: "dockerfile: Dockerfile: no such file in the context"},
		{name: "dockerfile leaves the context", build: manifest.Build{Dockerfile: "../Dockerfile"}, files: map[string]string{"main.go": "x"}, wantErr: `dockerfile: "../Dockerfile": must be a file of the context`},
		{name: "both dockerfiles", build: manifest.Build{Dockerfile: "D", DockerfileInline: df}, files: map[string]string{"D": df}, wantErr: "dockerfileInline: give dockerfile or dockerfileInline, not both"},
		{name: "does not parse", files: map[string]string{"Dockerfile": "FROM scratch\nCOPY --nope a b\n"}, wantErr: "dockerfile: does not parse"},
		{name: "no FROM", files: map[string]string{"Dockerfile": "# nothing\n"}, wantErr: "dockerfile: does not parse"},
		{name: "unknown target", build: manifest.Build{Target: "prod"}, files: map[string]string{"Dockerfile": df}, wantErr: `target: "prod" is not a stage of the Dockerfile (stages: base, final)`},
		{name: "a link", files: map[string]string{"Dockerfile": df}, links: []string{"current"}, wantErr: "context: current: a symbolic link"},
		{name: "an ignored link", files: map[string]string{"Dockerfile": df, ".dockerignore": "current\n"}, links: []string{"current"}, want: []string{".dockerignore", "Dockerfile"}},
		{name: "bad pattern", files: map[string]string{"Dockerfile": df, ".dockerignore": "[\n"}, wantErr: "context: .dockerignore"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := resolve(t, tt.build, tt.files, tt.links...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := contextPaths(c); !slices.Equal(got, tt.want) {
				t.Errorf("context %q, want %q", got, tt.want)
			}
			if !strings.HasPrefix(c.Image, "hostlet-build/shop-web:") || len(c.Image) != len("hostlet-build/shop-web:")+32 {
				t.Errorf("image %q is not hostlet-build/shop-web:<32 hex>", c.Image)
			}
			if c.Build.Image != "example.org/web:dev" || c.Build.Files.Source != "app" || c.Build.Recipe == "" {
				t.Errorf("build %+v: the author's image, the context's path or the recipe is missing", c.Build)
			}
		})
	}
}

// The image's name changes with every input, and only with them.
func TestTagFollowsInputs(t *testing.T) {
	files := map[string]string{"Dockerfile": "FROM scratch\nCOPY . /\n", "main.go": "x", ".dockerignore": "*.md\n", "README.md": "r"}
	base, err := resolve(t, manifest.Build{}, files)
	if err != nil {
		t.Fatal(err)
	}
	change := func(name string, b manifest.Build, edit func(map[string]string)) {
		t.Helper()
		f := maps.Clone(files)
		edit(f)
		c, err := resolve(t, b, f)
		if err != nil {
			t.Fatal(err)
		}
		if c.Image == base.Image {
			t.Errorf("%s: the image's name did not change", name)
		}
	}
	same := func(name string, b manifest.Build, edit func(map[string]string)) {
		t.Helper()
		f := maps.Clone(files)
		edit(f)
		c, err := resolve(t, b, f)
		if err != nil {
			t.Fatal(err)
		}
		if c.Image != base.Image {
			t.Errorf("%s: the image's name changed", name)
		}
	}
	none := func(map[string]string) {}
	change("a context file", manifest.Build{}, func(f map[string]string) { f["main.go"] = "y" })
	change("a new file", manifest.Build{}, func(f map[string]string) { f["b.go"] = "" })
	change("the Dockerfile", manifest.Build{}, func(f map[string]string) { f["Dockerfile"] += "ENV A=1\n" })
	change("an arg", manifest.Build{Args: map[string]string{"A": "1"}}, none)
	change("a label", manifest.Build{Labels: map[string]string{"A": "1"}}, none)
	change("the network", manifest.Build{Network: "none"}, none)
	change("an extra host", manifest.Build{ExtraHosts: []string{"a:10.0.0.1"}}, none)
	same("an ignored file", manifest.Build{}, func(f map[string]string) { f["README.md"] = "changed" })
	same("no_cache and pull", manifest.Build{NoCache: true, Pull: true}, none)
	same("the author's image", manifest.Build{Image: "other:1"}, none)
}

func TestWriteTar(t *testing.T) {
	tests := []struct {
		name      string
		build     manifest.Build
		files     map[string]string
		wantName  string
		wantFiles []string
	}{
		{name: "its own Dockerfile", files: map[string]string{"Dockerfile": "FROM scratch\n", "run.sh": "#!/bin/sh\n"}, wantName: "Dockerfile", wantFiles: []string{"Dockerfile:644", "run.sh:755"}},
		{name: "inline", build: manifest.Build{DockerfileInline: "FROM scratch\n"}, files: map[string]string{"a": "x", ".dockerignore": "b\n"}, wantName: ".hostlet.Dockerfile", wantFiles: []string{"a:644", ".hostlet.Dockerfile:644", ".dockerignore:644"}},
		{name: "an ignored Dockerfile", files: map[string]string{"Dockerfile": "FROM scratch\n", ".dockerignore": "Dockerfile\n", "a": "x"}, wantName: ".hostlet.Dockerfile", wantFiles: []string{"a:644", ".hostlet.Dockerfile:644", ".dockerignore:644"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := resolve(t, tt.build, tt.files)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			name, err := buildctx.WriteTar(&buf, c.Build)
			if err != nil {
				t.Fatal(err)
			}
			if name != tt.wantName || buildctx.RecipeName(c.Build) != name {
				t.Errorf("Dockerfile %q (RecipeName %q), want %q", name, buildctx.RecipeName(c.Build), tt.wantName)
			}
			var got []string
			tr := tar.NewReader(&buf)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, h.Name+":"+strconv.FormatInt(h.Mode, 8))
				if h.Name == name {
					data, _ := io.ReadAll(tr)
					if string(data) != c.Build.Recipe {
						t.Errorf("the tar's Dockerfile %q, want %q", data, c.Build.Recipe)
					}
				}
			}
			if !slices.Equal(got, tt.wantFiles) {
				t.Errorf("tar %q, want %q", got, tt.wantFiles)
			}
		})
	}
}

func TestListFolder(t *testing.T) {
	f := buildctx.NewListFolder([]string{"app/a", "app/sub/b", "other/c", "appx/d"}, "app", func(n string) ([]byte, error) { return []byte(n), nil }, nil)
	es, err := f.ReadDir("")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Name != "a" || es[0].Dir || es[1].Name != "sub" || !es[1].Dir {
		t.Errorf("entries %+v, want a and the folder sub", es)
	}
	if data, err := f.ReadFile("sub/b"); err != nil || string(data) != "app/sub/b" {
		t.Errorf("ReadFile(sub/b) = %q, %v", data, err)
	}
	if _, err := f.ReadFile("../other/c"); err == nil {
		t.Error("ReadFile(../other/c) read a file outside the folder")
	}
	if _, err := f.ReadDir("nope"); err == nil {
		t.Error("ReadDir of a missing folder did not fail")
	}
}

// FuzzResolve: no Dockerfile or .dockerignore makes Resolve panic, and a
// resolved build always writes a tar holding its Dockerfile.
func FuzzResolve(f *testing.F) {
	f.Add("FROM scratch\nCOPY . /\n", "*.md\n!KEEP.md\n", "")
	f.Add("FROM scratch AS a\nFROM a AS b\nRUN x\n", "[", "b")
	f.Add("# syntax=docker/dockerfile:1\nFROM scratch\nARG X=${Y:-z}\n", "**/x\n", "A")
	// The hostile Dockerfiles of the build tests.
	for _, s := range testkit.Literals(f, func(s string) bool { return strings.Contains(s, "FROM ") },
		"recipe_test.go", filepath.Join("..", "..", "runtime", "build_isolation_test.go")) {
		f.Add(s, "", "")
	}
	f.Fuzz(func(t *testing.T, dockerfile, ignore, target string) {
		files := map[string]string{"Dockerfile": dockerfile, ".dockerignore": ignore, "main.go": "x", "sub/a.md": "y"}
		c, err := resolve(t, manifest.Build{Target: target}, files)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		name, err := buildctx.WriteTar(&buf, c.Build)
		if err != nil || name == "" {
			t.Fatalf("WriteTar: %q %v", name, err)
		}
	})
}

// TestCheckRecipeRefusesReachingOut: what would make the engine fetch or
// run something beyond the context on the host's behalf is refused before
// anything is built (moved here from the engine attack tests: every build
// passes this check, and runtime.Build builds what it is given).
func TestCheckRecipeRefusesReachingOut(t *testing.T) {
	for _, tt := range []struct{ name, recipe, want string }{
		{"ADD of a URL", "FROM scratch\nADD http://127.0.0.1:10260/status /loot\n", "a URL or git source is refused"},
		{"ADD of https", "FROM scratch\nADD --checksum=sha256:00 https://example.org/a.tgz /\n", "a URL or git source is refused"},
		{"ADD of a git repository", "FROM scratch\nADD git@github.com:org/repo.git /src\n", "a URL or git source is refused"},
		{"ADD of a variable", "FROM scratch\nARG U=http://169.254.169.254/\nADD ${U} /x\n", "a source named by a variable is refused"},
		{"ONBUILD ADD of a URL", "FROM scratch AS a\nONBUILD ADD http://127.0.0.1/x /x\nFROM a\n", "a URL or git source is refused"},
		{"RUN --mount of a bind", "FROM scratch\nRUN --mount=type=bind,from=other,target=/o [\"/h\"]\n", "RUN --mount is refused"},
		{"RUN --mount of a secret", "FROM scratch\nRUN --mount=type=secret,id=aws [\"/h\"]\n", "RUN --mount is refused"},
		{"RUN --mount without a type (a bind)", "FROM scratch\nRUN --mount=target=/o [\"/h\"]\n", "RUN --mount is refused"},
		{"RUN --network", "FROM scratch\nRUN --network=host [\"/h\"]\n", "RUN --network is refused"},
		{"RUN --security", "FROM scratch\nRUN --security=insecure [\"/h\"]\n", "RUN --security is refused"},
		{"a syntax directive", "# syntax=127.0.0.1:5000/evil/frontend:1\nFROM scratch\n", "the syntax directive"},
		{"a syntax directive like Docker's", "# syntax=docker/dockerfile.evil:1\nFROM scratch\n", "the syntax directive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := buildctx.CheckRecipe(tt.recipe, "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("CheckRecipe: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	for _, ok := range []string{
		"FROM scratch\nADD app.tar.gz /\nCOPY --from=base / /\n",
		"# escape=`\nFROM scratch\nADD a /a\n",
		"# syntax=docker/dockerfile:1.4\nFROM scratch\nRUN --mount=type=cache,target=/root/.cache/pip true\n",
	} {
		if err := buildctx.CheckRecipe(ok, ""); err != nil && !strings.Contains(err.Error(), "base") {
			t.Errorf("CheckRecipe(%q): %v", ok, err)
		}
	}
}

// Cache mounts are dropped from the Dockerfile sent (BuildKit shares them
// with every build on the engine; the classic builder knows none), the
// rest of the RUN kept; the Dockerfile then goes under its own name.
func TestCacheMountsAreNotSent(t *testing.T) {
	df := "# syntax=docker/dockerfile:1.4\nFROM scratch\nRUN --mount=type=cache,target=/root/.cache/pip \\\n    --mount=type=cache,id=gomod,target=/go/pkg/mod/cache pip install -r requirements.txt\nCOPY . /\n"
	c, err := resolve(t, manifest.Build{}, map[string]string{"Dockerfile": df, "requirements.txt": "flask\n"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Build.Recipe, "--mount") || !strings.Contains(c.Build.Recipe, "pip install -r requirements.txt") {
		t.Errorf("recipe sent:\n%s\nwant the RUN without its cache mounts", c.Build.Recipe)
	}
	if err := buildctx.CheckRecipe(c.Build.Recipe, ""); err != nil {
		t.Errorf("the recipe sent does not pass the check: %v", err)
	}
	if name := buildctx.RecipeName(c.Build); name != ".hostlet.Dockerfile" {
		t.Errorf("the changed Dockerfile is sent as %q, want .hostlet.Dockerfile (the context's own stays as it is)", name)
	}
}

// A .dockerignore within its byte bound but over MaxIgnorePatterns is
// refused before any entry is matched.
func TestIgnorePatternBound(t *testing.T) {
	var ign strings.Builder
	for i := range buildctx.MaxIgnorePatterns + 1 {
		ign.WriteString("p" + strconv.Itoa(i) + "\n")
	}
	_, err := resolve(t, manifest.Build{}, map[string]string{"Dockerfile": "FROM scratch\n", ".dockerignore": ign.String()})
	if err == nil || !strings.Contains(err.Error(), "patterns, over the limit") {
		t.Errorf("error %v, want the pattern bound", err)
	}
}

// TestLargeDockerignoreRefusedBeforeMatching: the work of reading a
// context is bounded by counts, not by a clock. A .dockerignore is one
// file of the context, bounded only as any file (manifest.MaxSize, 10 MiB:
// hundreds of thousands of patterns), and every entry of the context is
// matched against every pattern, the ignored ones too (they are not
// counted against MaxFiles); Resolve takes no context and cannot be
// stopped. Unbounded, a context well inside every other bound (1000
// files, a 215 KiB .dockerignore of 10000 patterns) kept a source read
// busy ~10 s, at every read of the source (polls, diff, validate); the
// time grows with patterns × entries (a 10 MiB .dockerignore: many
// minutes per read, per pod built from that context).
func TestLargeDockerignoreRefusedBeforeMatching(t *testing.T) {
	files := map[string]string{"Dockerfile": "FROM scratch\n"}
	var names []string
	for i := range 1000 {
		n := fmt.Sprintf("src/d%02d/file%04d.go", i%50, i)
		files[n] = "x"
	}
	var ign strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&ign, "**/nomatch%06d*.tmp\n", i)
	}
	ign.WriteString("!src/keep\n")
	files[".dockerignore"] = ign.String()
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	f := buildctx.NewListFolder(names, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
	c := manifest.Container{Name: "app", Build: &manifest.Build{Context: "."}}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- buildctx.Resolve("slow", &c, ".", f) }()
	select {
	case err := <-done:
		t.Logf("resolved in %s: %v", time.Since(start), err)
		// A .dockerignore past MaxIgnoreBytes or MaxIgnorePatterns is
		// refused before any entry is matched.
		if err == nil || !strings.Contains(err.Error(), ".dockerignore") || !strings.Contains(err.Error(), "over the limit") {
			t.Errorf("a context of %d files and a %d KiB .dockerignore (10001 patterns) was resolved (%v), not refused at its bounds", len(files), len(files[".dockerignore"])>>10, err)
		}
	case <-time.After(60 * time.Second):
		t.Errorf("resolving a context of %d files and a %d KiB .dockerignore has not ended after 60s (and cannot be cancelled)", len(files), len(files[".dockerignore"])>>10)
	}
}
