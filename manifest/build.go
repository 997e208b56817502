package manifest

// BuildRepository is the repository of every image hostlet builds: a
// built image is tagged BuildRepository/<pod>-<container>:<digest of its
// inputs>.
const BuildRepository = "hostlet-build"

// Build is an image built from files of the source, at its revision, by
// the engine (a Compose service's build:). The author writes Context and
// the options; hostlet fills in the rest when it reads the source (Files,
// Recipe, Image) and names the container's image after the inputs'
// digest, so unchanged inputs are never built twice. Values of those
// fields given by hand are replaced.
type Build struct {
	// Context is the build's folder, relative to the manifest file (a
	// Compose project's folder); it must stay inside the source.
	Context string `json:"context"`
	// Dockerfile is the Dockerfile's path in the context ("Dockerfile"
	// when empty); DockerfileInline, when set, is the Dockerfile itself.
	Dockerfile       string `json:"dockerfile,omitempty"`
	DockerfileInline string `json:"dockerfileInline,omitempty"`
	// Args are build arguments (ARG). They are recorded in the image's
	// history by the engine, so they are no place for secrets; hostlet
	// still never shows their values.
	Args map[string]string `json:"args,omitempty"`
	// Target is the stage of a multi-stage Dockerfile to build.
	Target string `json:"target,omitempty"`
	// Labels are set on the image.
	Labels map[string]string `json:"labels,omitempty"`
	// Network is the network of RUN steps: default, none or host (host
	// needs the host config's policy.hostNetwork).
	Network string `json:"network,omitempty"`
	// ExtraHosts are "name:ip" lines of /etc/hosts in RUN steps.
	ExtraHosts []string `json:"extraHosts,omitempty"`
	// NoCache builds every step anew; Pull pulls newer base images.
	// Neither changes the image's name.
	NoCache bool `json:"noCache,omitempty"`
	Pull    bool `json:"pull,omitempty"`

	// Files are the context's files after .dockerignore (Source: the
	// context's path in the source), filled in by hostlet.
	Files *Files `json:"files,omitempty"`
	// Recipe is the Dockerfile's content, filled in by hostlet.
	Recipe string `json:"recipe,omitempty"`
	// Image is the name the author gave beside the build (Compose's
	// image: next to build:): the built image is tagged with it too.
	Image string `json:"image,omitempty"`
}
