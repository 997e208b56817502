package imageupdate_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/imageupdate"
	"github.com/hostlet/hostlet/registry"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fakeRegistry answers from a map; it counts listings.
type fakeRegistry struct {
	tags     map[string][]string
	listings map[string]int
}

func (f *fakeRegistry) Tags(_ context.Context, repo string) (registry.Listing, error) {
	f.listings[repo]++
	tags, ok := f.tags[repo]
	if !ok {
		return registry.Listing{}, fmt.Errorf("%s: NAME_UNKNOWN", repo)
	}
	return registry.Listing{Tags: tags}, nil
}

func (f *fakeRegistry) Digest(_ context.Context, ref string) (string, error) {
	return "sha256:" + strings.Repeat(fmt.Sprintf("%x", len(ref)%16), 64), nil
}

func copyTree(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
	return to
}

// The files after an update, compared with testdata/golden: only the
// tags move; comments, quoting, key order, precision and suffixes stay.
func TestUpdateKeepsTheFilesAsWritten(t *testing.T) {
	dir := copyTree(t, "testdata/src")
	reg := &fakeRegistry{listings: map[string]int{}, tags: map[string][]string{
		"registry.test/shop/web":  {"1.4.2", "1.4.3", "1.5.0", "2.0.0", "2.0.0-rc.1", "1.4.3-alpine", "latest"},
		"registry.test/shop/side": {"1.4", "1.5", "1.5.0", "2.0"},
	}}
	targets, problems, err := imageupdate.Scan("apps", dir)
	if err != nil || len(problems) > 0 {
		t.Fatalf("scan: %v %v", err, problems)
	}
	us := imageupdate.Decide(t.Context(), reg, targets, nil)
	var got []string
	for _, u := range us {
		got = append(got, fmt.Sprintf("%s %s/%s %s -> %s %s", u.Target.File, u.Target.Pod, u.Target.Container, u.From, u.To, u.Err))
	}
	want := []string{
		"apps/web.yaml web/app 1.4.2 -> 1.4.3 ",
		"apps/web.yaml web/side 1.4 -> 1.5 ",
		"apps/web.yaml web/alpine 1.4.2-alpine -> 1.4.3-alpine ",
		"apps/web.yaml pinned/app 1.4.2 -> 1.5.0 ",
		"blog/compose.yaml blog-web/web 1.4.2 ->  ",
		"blog/compose.yaml blog-admin/admin 1.4.2 ->  ",
		"shop/compose.yaml shop-web/web 1.4.2 -> 1.4.3 ",
		"shop/compose.yaml shop-worker/worker 1.4.2 -> 1.4.3 ",
		"shop/compose.yaml shop-cache/cache 1.4 -> 1.5 ",
	}
	if !slices.Equal(got, want) {
		t.Errorf("decisions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One listing per repository, however many images use it.
	for repo, n := range reg.listings {
		if n != 1 {
			t.Errorf("%s listed %d times, want once", repo, n)
		}
	}
	// BLOG_TAG: web may go to 1.4.3 and admin to 1.5.0; the variable
	// moves neither.
	if s := us[4].Skipped; len(s) == 0 || !strings.Contains(s[0].Reason, "BLOG_TAG also sets the tag of") {
		t.Errorf("blog web skipped %+v, want the shared variable named", s)
	}
	files, err := imageupdate.Edits(dir, us)
	if err != nil {
		t.Fatal(err)
	}
	if err := imageupdate.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	compareTree(t, dir, "testdata/golden")
}

func compareTree(t *testing.T, dir, golden string) {
	t.Helper()
	if *update {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.CopyFS(golden, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		return
	}
	err := fs.WalkDir(os.DirFS(golden), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		want, _ := os.ReadFile(filepath.Join(golden, p))
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return err
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n%s\nwant:\n%s", p, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A .env variable moves only when every image naming it has a policy
// and all of them move to one tag and one digest; otherwise nothing is
// edited and each says why.
func TestSharedVariableMovesOnlyTogether(t *testing.T) {
	for _, tc := range []struct {
		name, compose, why string
		override           string
	}{
		{name: "named in an environment", why: "WEB_TAG is named in 1 more places", compose: `
services:
  web:
    image: registry.test/shop/web:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4"}
    environment: {SCHEMA_FOR: "${WEB_TAG}"}
`},
		{name: "named in an override file", why: "WEB_TAG is named in 1 more places", compose: `
services:
  web:
    image: registry.test/shop/web:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4"}
`, override: "services:\n  migrate:\n    image: registry.test/shop/migrations:${WEB_TAG}\n"},
		{name: "a service without a policy", why: "WEB_TAG also sets the image of migrate, which has no policy", compose: `
services:
  web:
    image: registry.test/shop/web:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4"}
  migrate:
    image: registry.test/shop/migrations:${WEB_TAG}
`},
		{name: "two repositories pinned by digest", why: "it moves only when all move to one tag (and one digest)", compose: `
services:
  web:
    image: registry.test/shop/web:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4", pin: digest}
  worker:
    image: registry.test/shop/worker-long-name:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4", pin: digest}
`},
		{name: "one pinned, one not", why: "it moves only when all move to one tag (and one digest)", compose: `
services:
  web:
    image: registry.test/shop/web:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4", pin: digest}
  worker:
    image: registry.test/shop/web:${WEB_TAG}
    x-hostlet-image-policy: {semver: "~1.4"}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "shop"), 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string]string{"shop/compose.yaml": tc.compose, "shop/.env": "WEB_TAG=1.4.2\n"}
			if tc.override != "" {
				files["shop/compose.override.yaml"] = tc.override
			}
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			reg := &fakeRegistry{listings: map[string]int{}, tags: map[string][]string{
				"registry.test/shop/web": {"1.4.2", "1.4.3"}, "registry.test/shop/worker-long-name": {"1.4.2", "1.4.3"},
			}}
			targets, problems, err := imageupdate.Scan("apps", dir)
			if err != nil || len(problems) > 0 {
				t.Fatalf("scan: %v %v", err, problems)
			}
			us := imageupdate.Decide(t.Context(), reg, targets, nil)
			for _, u := range us {
				if u.Due() || len(u.Skipped) == 0 || !strings.Contains(u.Skipped[0].Reason, tc.why) {
					t.Errorf("%s: to %q, skipped %+v; want held back: %s", u.Target.Container, u.To, u.Skipped, tc.why)
				}
			}
			if files, err := imageupdate.Edits(dir, us); err != nil || len(files) != 0 {
				t.Errorf("edits %v, %v; want none", files, err)
			}
		})
	}
}

// A .env that is a link (shared by projects) is not replaced by a plain
// file: the update is refused, naming it.
func TestLinkedFilesAreNotEdited(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"common.env": "WEB_TAG=1.4.2\n", "shop/compose.yaml": "services:\n  web:\n    image: registry.test/shop/web:${WEB_TAG}\n    x-hostlet-image-policy: {semver: \"~1.4\"}\n"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../common.env", filepath.Join(dir, "shop/.env")); err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistry{listings: map[string]int{}, tags: map[string][]string{"registry.test/shop/web": {"1.4.2", "1.4.3"}}}
	targets, _, err := imageupdate.Scan("apps", dir)
	if err != nil || len(targets) != 1 {
		t.Fatalf("scan: %v %+v", err, targets)
	}
	us := imageupdate.Decide(t.Context(), reg, targets, nil)
	if _, err := imageupdate.Edits(dir, us); err == nil || !strings.Contains(err.Error(), "link") {
		t.Errorf("edits through a link: %v, want refused", err)
	}
}

// A Compose project's pods are named as hostlet names them, a project
// name with a variable or odd characters included, so holds and
// rollbacks find them.
func TestComposePodsAreNamedAsHostletNamesThem(t *testing.T) {
	for _, tc := range []struct{ dir, name, env, want string }{
		{dir: "shop", want: "shop-web"},
		{dir: "My.Shop", want: "myshop-web"},
		{dir: "shop", name: "name: ${PROJECT:-Blog}\n", want: "blog-web"},
		{dir: "shop", name: "name: ${PROJECT}\n", env: "PROJECT=store\n", want: "store-web"},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, tc.dir, "compose.yaml")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		text := tc.name + "services:\n  web:\n    image: registry.test/shop/web:1.4.2\n    x-hostlet-image-policy: {semver: \"~1.4\"}\n"
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if tc.env != "" {
			if err := os.WriteFile(filepath.Join(dir, tc.dir, ".env"), []byte(tc.env), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		targets, problems, err := imageupdate.Scan("apps", dir)
		if err != nil || len(problems) > 0 || len(targets) != 1 || targets[0].Pod != tc.want {
			t.Errorf("%s %q: targets %+v, problems %v, %v; want pod %s", tc.dir, tc.name, targets, problems, err, tc.want)
		}
	}
}

// A line break the parser counts and the editor may not (U+2028 in a
// string above) never moves another container's image: the edit lands
// on the image meant, or the file is refused.
func TestAnEditNeverLandsOnAnotherImage(t *testing.T) {
	dir := t.TempDir()
	text := "version: v1beta1\nid: web\nlabels: {note: \"x\u2028y\"}\ncontainers:\n" +
		"  - {name: app, image: \"registry.test/shop/web:1.4.2\", imagePolicy: {semver: \"~1.4\"}}\n" +
		"  - {name: sid, image: \"registry.test/shop/web:1.4.2\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistry{listings: map[string]int{}, tags: map[string][]string{"registry.test/shop/web": {"1.4.2", "1.4.3"}}}
	targets, _, err := imageupdate.Scan("apps", dir)
	if err != nil || len(targets) != 1 {
		t.Fatalf("scan: %v %+v", err, targets)
	}
	files, err := imageupdate.Edits(dir, imageupdate.Decide(t.Context(), reg, targets, nil))
	if err != nil {
		return // refused: fine
	}
	got := string(files["web.yaml"])
	if want := strings.Replace(text, "shop/web:1.4.2\", imagePolicy", "shop/web:1.4.3\", imagePolicy", 1); got != want {
		t.Errorf("edited:\n%q\nwant:\n%q", got, want)
	}
}

// An init container's imagePolicy moves its tag as an app container's
// does.
func TestInitContainerImagesAreUpdated(t *testing.T) {
	dir := t.TempDir()
	text := "version: v1beta1\nid: web\ninitContainers:\n" +
		"  - {name: migrate, image: \"registry.test/shop/migrate:2.0.1\", imagePolicy: {semver: \"~2.0\"}}\n" +
		"containers:\n  - {name: app, image: \"registry.test/shop/web:1.4.2\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := &fakeRegistry{listings: map[string]int{}, tags: map[string][]string{"registry.test/shop/migrate": {"2.0.1", "2.0.2"}}}
	targets, _, err := imageupdate.Scan("apps", dir)
	if err != nil || len(targets) != 1 || targets[0].Container != "migrate" {
		t.Fatalf("scan: %v %+v", err, targets)
	}
	files, err := imageupdate.Edits(dir, imageupdate.Decide(t.Context(), reg, targets, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(files["web.yaml"]), strings.Replace(text, "migrate:2.0.1", "migrate:2.0.2", 1); got != want {
		t.Errorf("edited:\n%q\nwant:\n%q", got, want)
	}
}
