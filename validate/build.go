package validate

import (
	"fmt"
	"io/fs"
	"strings"

	"github.com/distribution/reference"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// Bounds of a build's settings.
const (
	MaxBuildArgs   = 256
	MaxBuildLabels = 256
)

// build checks container f's build: it was read from the source (its
// context's files, its Dockerfile, the image named after them), and its
// settings are sound; a build on the host's network needs
// policy.hostNetwork.
func (c *checker) build(f string, ct manifest.Container, p Policy) {
	b := ct.Build
	if b == nil {
		return
	}
	f += ".build"
	if c.readError(f) {
		// Reading it from the source failed: that error says why.
		return
	}
	if b.Files == nil || b.Recipe == "" {
		c.add(f+".context", "%q was not read: a build's context is a folder of a file or git source (an HTTP, etcd or push source has none)", b.Context)
		return
	}
	if tag, digest, _ := strings.Cut(ct.Image, ":"); !buildctx.IsBuilt(tag) || !strings.HasPrefix(buildctx.Digest(b), digest) || len(digest) < 32 {
		c.add(f, "the image %q is not the one its inputs name (hostlet names a built image itself)", ct.Image)
	}
	for _, it := range b.Files.Items {
		if !fs.ValidPath(it.Path) || it.Path == "." {
			c.add(f+".context", "%q is not a path inside the context", it.Path)
			return
		}
	}
	if err := buildctx.CheckRecipe(b.Recipe, b.Target); err != nil {
		c.add(f, "%v", err)
	}
	if len(b.Args) > MaxBuildArgs {
		c.add(f+".args", "%d args are over the limit of %d", len(b.Args), MaxBuildArgs)
	}
	for k := range b.Args {
		switch {
		case k == "" || strings.ContainsAny(k, "= \t\n"):
			c.add(f+".args", "%q is not an argument name", k)
		case strings.HasPrefix(strings.ToUpper(k), "BUILDKIT_"):
			c.add(f+".args", "%s: BUILDKIT_ arguments set the builder itself (a frontend image to pull and run, ...): refused", k)
		}
	}
	if len(b.Labels) > MaxBuildLabels {
		c.add(f+".labels", "%d labels are over the limit of %d", len(b.Labels), MaxBuildLabels)
	}
	for k := range b.Labels {
		if k == "" || strings.HasPrefix(k, "io.hostlet.") {
			c.add(f+".labels", "%q: not a label name of the author's (io.hostlet.* are hostlet's)", k)
		}
		if buildctx.EventAttribute(k) {
			c.add(f+".labels", "%q: the engine's container events carry a container's labels among their attributes, and this one would overwrite the event's own; use another key", k)
		}
	}
	switch b.Network {
	case "", "default", "none":
	case "host":
		if !p.HostNetwork {
			c.add(f+".network", "a build on the host's network is refused: set the host config's policy.hostNetwork: true to allow it")
		}
	default:
		c.add(f+".network", "%q is not one of default, none or host", b.Network)
	}
	for j, h := range b.ExtraHosts {
		if msg := extraHost(h); msg != "" {
			c.add(fmt.Sprintf("%s.extraHosts[%d]", f, j), "%s", msg)
		} else if strings.HasSuffix(h, ":"+HostGateway) {
			// Builders differ on it (the classic builder of 20.10 and
			// BuildKit of later engines): a run's extra host only.
			c.add(fmt.Sprintf("%s.extraHosts[%d]", f, j), "%q: host-gateway is for a container's extraHosts, not a build's (give the address)", h)
		}
	}
	if b.Image != "" {
		if msg := imageRef(b.Image); msg != "" {
			c.add(f+".image", "%q is not a valid image reference: %s", b.Image, msg)
		} else if reserved(b.Image) {
			c.add(f+".image", "%q: %s/ and hostlet-pause names are hostlet's own", b.Image, manifest.BuildRepository)
		}
	}
}

// readError reports whether the manifest came with an error of field f
// or below (a build its source could not read).
func (c *checker) readError(f string) bool {
	for _, name := range []string{f, c.src.Field(f)} {
		for _, e := range c.src.Errors {
			if e.Field == name || strings.HasPrefix(e.Field, name+".") {
				return true
			}
		}
	}
	return false
}

// reserved reports whether image names one of hostlet's own repositories
// (its builds', its pause image's), however it is spelled.
func reserved(image string) bool {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return false
	}
	path := reference.Path(named)
	return reference.Domain(named) == "docker.io" && (path == "library/hostlet-pause" || strings.HasPrefix(path, manifest.BuildRepository+"/"))
}
