package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/versions"

	"github.com/hostlet/hostlet/manifest/buildctx"
)

// heredocAPI is the first API version of engines whose own BuildKit
// Dockerfile frontend reads heredocs (Docker 23.0, Dockerfile frontend
// 1.5); Docker 20.10's (API 1.41) reads a heredoc's body as instructions,
// as the classic builder does.
const heredocAPI = "1.42"

// checkBuild checks what the build of spec on the builder of version
// would read, before anything is sent: a Dockerfile with heredocs is
// refused unless the builder reads them as hostlet's check did
// (checkHeredocs), the Dockerfile is checked as it is sent
// (buildctx.CheckSent: the source read's rules, and no RUN flag), a
// label of hostlet's or of the engine's event attributes is refused, and
// every image it starts FROM is made present (pulled
// when absent, or always when spec.Pull) and checked: its ONBUILD
// triggers with the Dockerfile's rules (buildctx.CheckTriggers), its
// labels for hostlet's. The builder then uses those images as they are
// (buildOptions never pulls). A refusal matches ErrBuild.
func (d *Docker) checkBuild(ctx context.Context, spec BuildSpec, version build.BuilderVersion) error {
	if err := d.checkHeredocs(spec.Recipe, version); err != nil {
		return err
	}
	// What the source read checked, checked again on the text sent:
	// Build builds what it is given.
	if err := buildctx.CheckSent(spec.Recipe, spec.Target); err != nil {
		return classify(err, ErrBuild)
	}
	for k := range spec.Labels {
		if buildctx.EventAttribute(k) || strings.HasPrefix(k, "io.hostlet.") {
			return classify(fmt.Errorf("label %s: refused (hostlet's own, or an attribute of the engine's container events, which a label overwrites)", k), ErrBuild)
		}
	}
	bases, err := buildctx.BaseImages(spec.Recipe, spec.Target, spec.Args)
	if err != nil {
		return classify(err, ErrBuild)
	}
	for _, ref := range bases {
		if err := d.checkBase(ctx, ref, spec.Pull); err != nil {
			return err
		}
	}
	return nil
}

// checkHeredocs refuses a recipe with heredocs on a builder that would
// read their bodies as instructions: the classic builder, and BuildKit
// with a Dockerfile frontend that does not read them (the engine's own
// before Docker 23, or the one a syntax directive names).
func (d *Docker) checkHeredocs(recipe string, version build.BuilderVersion) error {
	line, err := buildctx.HeredocLine(recipe)
	if err != nil {
		return classify(err, ErrBuild)
	}
	if line == 0 {
		return nil
	}
	const refused = "; hostlet refuses a Dockerfile the builder would read differently from its check (write the file with COPY of a context file instead)"
	if version != build.BuilderBuildKit {
		return classify(fmt.Errorf("line %d: a heredoc, and the engine's classic builder does not read heredocs (it reads their lines as instructions)%s", line, refused), ErrBuild)
	}
	if named, reads := buildctx.FrontendReadsHeredocs(recipe); named && !reads {
		return classify(fmt.Errorf("line %d: a heredoc, and the Dockerfile frontend the syntax directive names does not read heredocs (docker/dockerfile 1.4 and later do)%s", line, refused), ErrBuild)
	} else if !named && versions.LessThan(d.cli.ClientVersion(), heredocAPI) {
		return classify(fmt.Errorf("line %d: a heredoc, and this engine's own BuildKit Dockerfile frontend (API %s, before Docker 23) does not read heredocs (add the line `# syntax=docker/dockerfile:1`)%s", line, d.cli.ClientVersion(), refused), ErrBuild)
	}
	return nil
}

// checkBase makes base image ref present (pulled when absent, or always
// when pull) and checks its ONBUILD triggers and labels.
func (d *Docker) checkBase(ctx context.Context, ref string, pull bool) error {
	insp, err := d.cli.ImageInspect(ctx, ref)
	if err = translate(err); pull || IsNotFound(err) {
		if err := d.pull(ctx, ref); err != nil {
			return baseErr(ref, err)
		}
		insp, err = d.cli.ImageInspect(ctx, ref)
		err = translate(err)
	}
	if err != nil {
		return baseErr(ref, fmt.Errorf("inspect: %w", err))
	}
	if insp.Config == nil {
		return nil
	}
	triggers := insp.Config.OnBuild
	if d.engine.Podman() {
		if triggers, err = d.savedTriggers(ctx, ref); err != nil {
			return baseErr(ref, err)
		}
	}
	if err := buildctx.CheckTriggers(triggers); err != nil {
		return classify(fmt.Errorf("base image %s: %w", ref, err), ErrBuild)
	}
	if k := foreignLabel(insp.Config.Labels); k != "" {
		return classify(fmt.Errorf("base image %s: it carries hostlet's label %s (a container of the build would too): refused", ref, k), ErrBuild)
	}
	return nil
}

// baseErr is the failure to get or read base image ref: a build failure,
// unless the engine could not be reached.
func baseErr(ref string, err error) error {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("base image %s: %w", ref, err)
	}
	return fmt.Errorf("%w: base image %s: %w", ErrBuild, ref, err)
}

// foreignLabel is a label of hostlet's (io.hostlet.*) a base image
// carries that is not a built image's: LabelBuildInstance and
// LabelBuildPod, with LabelManaged and LabelInstance on images built
// before those (see LabelBuildPod); "" when none.
func foreignLabel(labels map[string]string) string {
	legacy := labels[LabelBuildPod] != ""
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case !strings.HasPrefix(strings.ToLower(k), "io.hostlet."), k == LabelBuildInstance, k == LabelBuildPod:
		case legacy && (k == LabelManaged || k == LabelInstance):
		default:
			return k
		}
	}
	return ""
}
