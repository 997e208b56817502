package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	scrub "github.com/hostlet/hostlet/internal/redact"
)

// ErrBuild: an image build failed (a step's command, a Dockerfile the
// engine refused, a base image it could not get). The error text ends
// with the last lines of the build's log.
var ErrBuild = errors.New("image build failed")

// Labels of the images hostlet builds: the instance and the pod whose
// container it is. They are not the labels that make a container
// hostlet's (LabelManaged, LabelInstance): every container made from an
// image inherits its labels (an operator's `docker run`, the classic
// builder's step containers of a build FROM it). Images built before
// carry LabelManaged and LabelInstance instead of LabelBuildInstance;
// ListBuilt and the names a build takes still know them.
const (
	LabelBuildInstance = "io.hostlet.build.instance"
	LabelBuildPod      = "io.hostlet.build.pod"
)

// BuildSpec is one image build through the engine's build endpoint.
type BuildSpec struct {
	// Tags name the image: the first is hostlet's (derived from the
	// inputs).
	Tags []string
	// Names are the author's names for the result (Compose's image:
	// beside build:): each is given to the image only when no image has
	// it, or the one that has it is this instance's build for Pod; a
	// name another image holds (another pod's, another team's, a base
	// image) is left to it (BuildResult.Skipped).
	Names []string
	// Secrets are values no line of the log and no error may show, with
	// the values of Args: hidden before anything is cut to its bound.
	Secrets []string
	// Pod is the pod whose container uses the image, for its labels.
	Pod string
	// Dockerfile is the Dockerfile's path in the context tar, and Recipe
	// its text (required: the images it starts FROM are checked before
	// the build, and a Dockerfile the builder would read differently
	// from hostlet's check is refused).
	Dockerfile string
	Recipe     string
	Args       map[string]string
	Target     string
	Labels     map[string]string
	// NetworkMode is the RUN steps' network: "" (the default), none or
	// host.
	NetworkMode string
	ExtraHosts  []string
	NoCache     bool
	Pull        bool
	// Context writes the build context's tar; it is streamed to the
	// engine as it is written.
	Context func(w io.Writer) error
}

// BuildResult is what a build gives back: its log's last lines, and the
// Names not given to the image (held by an image that is not this pod's).
type BuildResult struct {
	Log      []string
	Duration time.Duration
	Skipped  []string
}

// Log bounds of a build: the lines kept, each cut to its bound.
const (
	BuildLogLines   = 20
	BuildLineLength = 300
)

// Build builds an image with the engine's default builder (see
// builderVersion), the context streamed from spec.Context through a pipe
// (never written to disk by hostlet), tags it with every name of
// spec.Tags, and gives it the names of spec.Names that are free or its
// own. The classic builder's
// intermediate containers are removed, failed steps' too. A failure
// matches ErrBuild and carries the log's last lines; an engine that
// cannot be reached matches ErrUnavailable.
func (d *Docker) Build(ctx context.Context, spec BuildSpec) (BuildResult, error) {
	start := d.clock.Now()
	if len(spec.Tags) == 0 || spec.Context == nil || spec.Recipe == "" {
		return BuildResult{}, errors.New("build: no tag, no context or no Dockerfile text")
	}
	// Values no log line and no error may show: the args', and Secrets.
	secrets := append(slices.Collect(maps.Values(spec.Args)), spec.Secrets...)
	version, err := d.builderVersion(ctx)
	if err != nil {
		return BuildResult{}, fmt.Errorf("build image %s: %w", spec.Tags[0], err)
	}
	if err := d.checkBuild(ctx, spec, version); err != nil {
		return BuildResult{Duration: d.clock.Since(start)}, scrub.Values(fmt.Errorf("build image %s: %w", spec.Tags[0], err), secrets...)
	}
	pr, pw := io.Pipe()
	written := make(chan error, 1)
	go func() {
		err := spec.Context(pw)
		pw.CloseWithError(err)
		written <- err
	}()
	resp, err := d.cli.ImageBuild(ctx, pr, d.buildOptions(spec, version))
	if err != nil && version == build.BuilderBuildKit && strings.Contains(strings.ToLower(err.Error()), "buildkit") && d.builder == "" {
		// An engine without BuildKit: the classic builder from now on.
		d.log.Warn("the engine refused a BuildKit build; using its classic builder", "error", err)
		d.noBuildKit.Store(true)
		pr.CloseWithError(err)
		<-written
		return d.Build(ctx, spec)
	}
	if err != nil {
		pr.CloseWithError(err)
		<-written
		// The request's URL carries the args: an error quoting it must not.
		return BuildResult{Duration: d.clock.Since(start)}, scrub.Values(fmt.Errorf("build image %s: %w", spec.Tags[0], classify(translate(err), ErrBuild)), secrets...)
	}
	log, buildErr := readBuildStream(resp.Body, secrets...)
	resp.Body.Close()
	pr.CloseWithError(errBuildEnded)
	werr := <-written
	res := BuildResult{Log: log, Duration: d.clock.Since(start)}
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("build image %s: %w", spec.Tags[0], ctx.Err())
	case buildErr != nil:
		return res, fmt.Errorf("build image %s: %w: %w%s", spec.Tags[0], ErrBuild, buildErr, logTail(log))
	case werr != nil && !errors.Is(werr, errBuildEnded):
		return res, fmt.Errorf("build image %s: write the context: %w", spec.Tags[0], werr)
	}
	for _, name := range spec.Names {
		if err := d.nameBuilt(ctx, spec.Tags[0], name, spec.Pod); err != nil {
			d.log.Warn("built image not given the name its author wrote", "image", spec.Tags[0], "name", name, "why", err)
			res.Skipped = append(res.Skipped, name)
		}
	}
	return res, nil
}

// buildOptions are the build endpoint's options of spec on the builder
// of version. The image is labelled as this instance's build for the
// pod (not with the labels that make a container hostlet's); the base
// images are never pulled by the builder: checkBuild pulled and checked
// them, and the builder uses those.
func (d *Docker) buildOptions(spec BuildSpec, version build.BuilderVersion) build.ImageBuildOptions {
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelBuildInstance] = d.instance
	labels[LabelBuildPod] = spec.Pod
	args := map[string]*string{}
	for k, v := range spec.Args {
		args[k] = &v
	}
	return build.ImageBuildOptions{
		Tags: spec.Tags, Dockerfile: spec.Dockerfile, BuildArgs: args, Target: spec.Target, Labels: labels,
		NetworkMode: spec.NetworkMode, ExtraHosts: spec.ExtraHosts, NoCache: spec.NoCache, PullParent: false,
		Remove: true, ForceRemove: true, Version: version,
	}
}

// builtFor reports whether an image's labels say it is this instance's
// build for pod: labelled LabelBuildInstance, or, built by a hostlet
// before those labels, LabelManaged and LabelInstance.
func (d *Docker) builtFor(labels map[string]string, pod string) bool {
	if labels[LabelBuildPod] != pod {
		return false
	}
	return labels[LabelBuildInstance] == d.instance ||
		labels[LabelBuildInstance] == "" && labels[LabelManaged] == "true" && labels[LabelInstance] == d.instance
}

// nameBuilt gives built image ref the name name, unless an image that is
// not this instance's build for pod has it.
func (d *Docker) nameBuilt(ctx context.Context, ref, name, pod string) error {
	insp, err := d.cli.ImageInspect(ctx, name)
	switch err := translate(err); {
	case err == nil:
		if insp.Config == nil || !d.builtFor(insp.Config.Labels, pod) {
			return errors.New("another image has that name (not this pod's build): it is left as it is")
		}
	case !IsNotFound(err):
		return fmt.Errorf("inspect %s: %w", name, err)
	}
	if err := d.cli.ImageTag(ctx, ref, name); err != nil {
		return fmt.Errorf("tag %s as %s: %w", ref, name, translate(err))
	}
	return nil
}

// builderVersion is the builder a build uses: the one WithBuilder forced,
// else the engine's default (its /_ping's Builder-Version): BuildKit on
// engines that default to it (Docker 23 and later, whose builder
// garbage-collects its cache by default), the classic builder elsewhere
// (Debian's 20.10 here: it runs BuildKit through the API too, but then
// nothing collects BuildKit's cache, and a Dockerfile's cache mounts
// would be shared with every other build on the engine).
func (d *Docker) builderVersion(ctx context.Context) (build.BuilderVersion, error) {
	switch d.builder {
	case string(build.BuilderV1), string(build.BuilderBuildKit):
		return build.BuilderVersion(d.builder), nil
	}
	if d.noBuildKit.Load() {
		return build.BuilderV1, nil
	}
	ping, err := d.cli.Ping(ctx)
	if err != nil {
		return "", translate(err)
	}
	if ping.BuilderVersion == build.BuilderBuildKit {
		return build.BuilderBuildKit, nil
	}
	return build.BuilderV1, nil
}

// errBuildEnded stops writing a context the engine no longer reads.
var errBuildEnded = errors.New("the build ended before its context was read")

// MaxLogTail bounds the log's lines an error carries (the last ones), so
// that the whole error fits an event's message (4 KiB) and the most
// recent lines, which say what failed, are never the ones cut.
const MaxLogTail = 3 << 10

// logTail is the log's last lines, at most MaxLogTail bytes of them, as
// the end of an error's text.
func logTail(log []string) string {
	n, size := len(log), 0
	for n > 0 && size+len(log[n-1])+1 <= MaxLogTail {
		size += len(log[n-1]) + 1
		n--
	}
	if n == len(log) {
		return ""
	}
	return "; build log (last lines):\n" + strings.Join(log[n:], "\n")
}

// buildMessage is a message of the build's stream: the classic
// builder's log lines (Stream), or BuildKit's progress (ID
// moby.buildkit.trace, Aux a protobuf StatusResponse in base64), and the
// error.
type buildMessage struct {
	ID          string          `json:"id"`
	Aux         json.RawMessage `json:"aux"`
	Stream      string          `json:"stream"`
	Error       string          `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// buildkitTrace is the ID of BuildKit's progress messages.
const buildkitTrace = "moby.buildkit.trace"

// readBuildStream reads the build's stream to its end, keeping its last
// lines, and returns the error reported inside it. Every line and the
// error are shown to operators: secrets are hidden and control
// characters (terminal escapes) replaced before they are cut to their
// bound.
func readBuildStream(r io.Reader, secrets ...string) ([]string, error) {
	dec := json.NewDecoder(r)
	var (
		lines   []string
		partial string
		failed  error
		trace   = newTraceLog()
	)
	keep := func(s string) {
		s = shown(strings.TrimRight(s, "\r"), secrets)
		if strings.TrimSpace(s) == "" {
			return
		}
		if len(s) > BuildLineLength {
			s = s[:BuildLineLength] + "..."
		}
		lines = append(lines, s)
		if len(lines) > BuildLogLines {
			lines = lines[len(lines)-BuildLogLines:]
		}
	}
	for {
		var m buildMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if failed == nil {
				failed = fmt.Errorf("read the build's stream: %w", err)
			}
			break
		}
		if m.ID == buildkitTrace && len(m.Aux) > 0 {
			var raw []byte
			if json.Unmarshal(m.Aux, &raw) == nil {
				m.Stream = trace.lines(raw)
			}
		}
		if m.Stream != "" {
			parts := strings.Split(partial+m.Stream, "\n")
			partial = parts[len(parts)-1]
			if len(partial) > 4*BuildLineLength {
				partial = partial[:4*BuildLineLength]
			}
			for _, p := range parts[:len(parts)-1] {
				keep(p)
			}
		}
		msg := m.Error
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			msg = m.ErrorDetail.Message
		}
		if msg != "" && failed == nil {
			msg = shown(msg, secrets)
			if len(msg) > BuildLineLength {
				msg = msg[:BuildLineLength] + "..."
			}
			failed = errors.New(msg)
		}
	}
	keep(partial)
	return lines, failed
}

// shown is s as an operator may see it: secrets hidden, control
// characters replaced by spaces.
func shown(s string, secrets []string) string {
	if len(secrets) > 0 {
		s = scrub.Values(errors.New(s), secrets...).Error()
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// BuiltImage is an image hostlet built for a pod.
type BuiltImage struct {
	ID string
	// Tags are its names as Docker shows them (compare these); Refs the
	// same names as the engine gave them (remove by these: Podman
	// resolves a short name again, maybe to another image).
	Tags, Refs []string
	Created    time.Time
}

// ListBuilt lists the images this instance built for pod, newest first:
// those labelled LabelBuildInstance, and those a hostlet built before
// (labelled LabelManaged and LabelInstance).
func (d *Docker) ListBuilt(ctx context.Context, pod string) ([]BuiltImage, error) {
	var out []BuiltImage
	seen := map[string]bool{}
	for _, f := range []filters.Args{
		filters.NewArgs(filters.Arg("label", LabelBuildInstance+"="+d.instance), filters.Arg("label", LabelBuildPod+"="+pod)),
		filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelInstance+"="+d.instance), filters.Arg("label", LabelBuildPod+"="+pod)),
	} {
		list, err := d.cli.ImageList(ctx, image.ListOptions{Filters: f})
		if err != nil {
			return nil, fmt.Errorf("list built images of pod %s: %w", pod, translate(err))
		}
		for _, im := range list {
			if seen[im.ID] || !d.builtFor(im.Labels, pod) {
				continue
			}
			seen[im.ID] = true
			tags := make([]string, 0, len(im.RepoTags))
			for _, t := range im.RepoTags {
				tags = append(tags, familiarImage(t, d.engine.Podman()))
			}
			out = append(out, BuiltImage{ID: im.ID, Tags: tags, Refs: slices.Clone(im.RepoTags), Created: time.Unix(im.Created, 0)})
		}
	}
	slices.SortStableFunc(out, func(a, b BuiltImage) int { return b.Created.Compare(a.Created) })
	return out, nil
}
