package validate_test

// What validation lets a build name (issue 15): its image's tags, and
// where its context comes from.

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// builtManifest is pod id with container name built from a one-file
// context, image given beside the build (Compose's image: next to
// build:, or a native image: next to build:).
func builtManifest(t *testing.T, id, name, image string) manifest.Manifest {
	t.Helper()
	files := map[string]string{"Dockerfile": "FROM scratch\nCOPY evil /hostlet\n", "evil": "x"}
	f := buildctx.NewListFolder([]string{"Dockerfile", "evil"}, "", func(n string) ([]byte, error) { return []byte(files[n]), nil }, nil)
	c := manifest.Container{Name: name, Image: image, Build: &manifest.Build{Context: "."}}
	if err := buildctx.Resolve(id, &c, ".", f); err != nil {
		t.Fatal(err)
	}
	return manifest.Manifest{Version: manifest.Version, ID: id, Containers: []manifest.Container{c}}
}

// TestBuildCannotRetagAnotherImage: the name given beside a build becomes
// a second tag of the built image (sync.BuildSpec). Were only
// hostlet-build/ names refused, any manifest author could re-point the
// tag of an image another pod runs (postgres:16, another source's app),
// or hostlet's own infra image hostlet-pause:<binary hash> (the same on
// every host of a release, used by PauseImage as soon as the tag exists),
// with its own build. Every pod created afterwards from that tag would
// run the author's code: its volumes, env, secrets, and every pod's
// network namespace for the pause image.
func TestBuildCannotRetagAnotherImage(t *testing.T) {
	victims := []string{
		"hostlet-pause:0123456789ab", "postgres:16", "registry.example.org/team-b/api:1.4",
		// The same repository as hostlet-build/web-app once normalised:
		// the check of the hostlet-build/ prefix is spelling-deep, so
		// another pod's BUILT image (the digest of its inputs is
		// computable from its source) is overwritten too, and its next
		// container runs mallory's build without building.
		"docker.io/hostlet-build/web-app:5ab1c6ef5f07c63b4e4c58f6c4ab6b47",
		"docker.io/library/hostlet-pause:0123456789ab",
	}
	for _, victim := range victims {
		t.Run(strings.ReplaceAll(victim, "/", "_"), func(t *testing.T) {
			m := builtManifest(t, "mallory", "app", victim)
			if err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{}); err != nil {
				t.Logf("refused: %v", err)
				return
			}
			spec := hsync.BuildSpec("mallory", m.Containers[0])
			for _, tag := range spec.Tags[1:] {
				if tag == victim {
					t.Errorf("accepted: the build of pod mallory tags its image %q too (tags %q): the tag of an image it does not own moves to its build", victim, spec.Tags)
				}
			}
		})
	}
}

// TestLongPodIDHasAValidBuiltImageName: a pod id of up to 253 characters
// is valid, and so is a container name of up to 63. A built image named
// hostlet-build/<pod>-<container> would be over the 255 characters an
// image name may have, and a valid pod with a build rejected with an
// error about an image name its author never wrote.
func TestLongPodIDHasAValidBuiltImageName(t *testing.T) {
	id := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 50)
	plain := pod(id)
	if err := validate.Manifest(sourced("s", "web.yaml", 0, plain), validate.Options{}); err != nil {
		t.Fatalf("the pod id itself is refused: %v", err)
	}
	m := builtManifest(t, id, "app", "")
	if err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{}); err != nil {
		t.Errorf("pod %d chars long with a build is refused: %v", len(id), err)
	}
}

// TestHandWrittenBuildContextRefused: Files, Recipe and the image name
// are "filled in by hostlet" only where a file or git source resolves the
// build. A manifest from a push, HTTP or etcd source that writes them by
// hand (files.items[].data in base64, image = the digest's tag,
// computable by anyone) is refused: valid, such a source would get builds
// (RUN, ADD <url>, ...) that the design says it cannot have ("an HTTP,
// etcd or push source has none"), with context paths no folder has
// ("../../etc/evil" goes into the tar as it is).
func TestHandWrittenBuildContextRefused(t *testing.T) {
	b := manifest.Build{Context: ".", Recipe: "FROM scratch\nCOPY . /\n", Files: manifest.NewFiles(".", false, []manifest.FileItem{{Path: "../../etc/evil", Data: []byte("x")}})}
	tag := buildctx.Tag("p", "app", &b)
	body := fmt.Sprintf(`{"version":"v1beta1","id":"p","containers":[{"name":"app","image":%q,"build":{"context":".","recipe":%q,"files":{"source":".","items":[{"path":"../../etc/evil","data":%q}]}}}]}`,
		tag, b.Recipe, base64.StdEncoding.EncodeToString([]byte("x")))
	ms, err := manifest.Decode([]byte(body), manifest.Origin{Source: "push"})
	if err != nil || len(ms) != 1 {
		t.Fatalf("decode: %v", err)
	}
	if err := validate.Manifest(ms[0], validate.Options{}); err == nil {
		t.Errorf("a pushed manifest with a hand-written build context (file %q) is valid: it will be built as %s", ms[0].Manifest.Containers[0].Build.Files.Items[0].Path, tag)
	}
}

// TestBuildExtraHostAtHostGateway: host-gateway is a container's extra
// host only; a build's is refused naming it (the builders of the engines
// hostlet drives do not agree on it), while an address is taken.
func TestBuildExtraHostAtHostGateway(t *testing.T) {
	for _, tt := range []struct {
		host, want string
	}{
		{"db.internal:10.0.0.5", ""},
		{"host.docker.internal:host-gateway", `pod "gw": containers[0].build.extraHosts[0]: "host.docker.internal:host-gateway": host-gateway is for a container's extraHosts, not a build's (give the address)`},
	} {
		m := builtManifest(t, "gw", "app", "")
		m.Containers[0].Build.ExtraHosts = []string{tt.host}
		var got []string // the errors about extra hosts (changing them after
		// Resolve also makes the built image's name stale: not this test's)
		for _, e := range validate.Flatten(validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})) {
			if strings.Contains(e.Error(), "extraHosts") {
				got = append(got, e.Error())
			}
		}
		if tt.want == "" && len(got) > 0 || tt.want != "" && (len(got) != 1 || !strings.HasSuffix(got[0], tt.want)) {
			t.Errorf("build extra host %q: errors %q, want %q", tt.host, got, tt.want)
		}
	}
}
