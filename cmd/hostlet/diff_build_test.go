package main

import (
	"strings"
	"testing"
)

// builtYAML is a pod whose image is built from the repository's app
// folder (relative to the manifest's file), with a build arg.
const builtYAML = `version: v1beta1
id: shop
containers:
  - name: web
    image: example.org/shop/web:dev
    build:
      context: ../../app
      args: {VERSION: "` + secretOld + `"}
`

// TestDiffShowsBuild: a native pod built from the repository: diff
// against the commit before says the container is built, and why (the
// context file that changed, by name); a file .dockerignore excludes
// changes nothing; a Dockerfile that does not parse is rejected, naming
// the file and field, and the running version stays. Build arg values
// appear in no output.
func TestDiffShowsBuild(t *testing.T) {
	f := newRefFleet(t)
	writeFile(t, f.repo.dir, "common/node-info.yaml", nodeInfoYAML)
	writeFile(t, f.repo.dir, "hosts/web-2/web.yaml", web2YAML)
	writeFile(t, f.repo.dir, "hosts/web-1/shop.yaml", builtYAML)
	writeFile(t, f.repo.dir, "app/Dockerfile", "FROM scratch\nARG VERSION\nCOPY main.go /main.go\n")
	writeFile(t, f.repo.dir, "app/main.go", "package main\n")
	writeFile(t, f.repo.dir, "app/.dockerignore", "*.md\n")
	writeFile(t, f.repo.dir, "app/README.md", "notes\n")
	f.commit(t, "A", "a built pod")

	writeFile(t, f.repo.dir, "app/main.go", "package main\n\nfunc main() {}\n")
	f.commit(t, "B", "a change to the context")
	text, js := f.diff(t, "HEAD~1", 2)
	t.Logf("diff:\n%s", text)
	for _, want := range []string{"~ web  recreate (build hostlet-build/shop-web:", "): context file main.go changed"} {
		if !strings.Contains(text, want) {
			t.Errorf("diff text does not say %q:\n%s", want, text)
		}
	}
	if !strings.Contains(js, `"build": "hostlet-build/shop-web:`) {
		t.Errorf("diff JSON has no build:\n%s", js)
	}
	mustNotContain(t, "diff", text+js, secretOld)

	writeFile(t, f.repo.dir, "app/README.md", "more notes\n")
	f.commit(t, "C", "a file the build ignores")
	text, _ = f.diff(t, "HEAD~1", 0)
	if strings.Contains(text, "shop") {
		t.Errorf("a file .dockerignore excludes changed the plan:\n%s", text)
	}

	writeFile(t, f.repo.dir, "app/Dockerfile", "FROM scratch\nCOPY --nope main.go /main.go\n")
	f.commit(t, "D", "a broken Dockerfile")
	text, _ = f.diff(t, "HEAD~1", 1)
	for _, want := range []string{"fleet:hosts/web-1/shop.yaml: rejected shop", "containers[0].build.dockerfile", "(the running version stays)"} {
		if !strings.Contains(text, want) {
			t.Errorf("diff text does not say %q:\n%s", want, text)
		}
	}
}
