package sync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// Builder builds the images of containers with a build and prunes the
// old ones (runtime.Docker).
type Builder interface {
	Build(ctx context.Context, spec hruntime.BuildSpec) (hruntime.BuildResult, error)
	ListBuilt(ctx context.Context, pod string) ([]hruntime.BuiltImage, error)
	RemoveImage(ctx context.Context, ref string) error
}

// DefaultBuildTimeout bounds one image build when Options.BuildTimeout
// is 0.
const DefaultBuildTimeout = 30 * time.Minute

// KeepBuilt is how many of a pod's built images are kept (the newest),
// besides those containers use.
const KeepBuilt = 2

// ReasonBuild: a container's image could not be built (the build log's
// last lines in the message); ReasonBuilding marks a Pending pod whose
// image is being built.
const (
	ReasonBuild    = "BuildFailed"
	ReasonBuilding = "Building"
)

// BuildSpec is the engine's build of container c of pod: its context
// streamed from the build's files.
func BuildSpec(pod string, c manifest.Container) hruntime.BuildSpec {
	b := c.Build
	var names []string
	if b.Image != "" {
		names = []string{b.Image}
	}
	network := b.Network
	if network == "default" {
		network = ""
	}
	return hruntime.BuildSpec{
		Tags: []string{c.Image}, Names: names, Pod: pod, Dockerfile: buildctx.RecipeName(b), Recipe: b.Recipe, Args: b.Args, Target: b.Target, Labels: b.Labels,
		NetworkMode: network, ExtraHosts: b.ExtraHosts, NoCache: b.NoCache, Pull: b.Pull,
		Context: func(w io.Writer) error {
			_, err := buildctx.WriteTar(w, b)
			return err
		},
	}
}

// checkBuild is ApplyOptions.Builds of a running Syncer: the image of
// container c of pod is built outside the sync (at most
// sync.buildConcurrency at a time) unless it is there.
func (s *Syncer) checkBuild(ctx context.Context, pod string, c manifest.Container) (bool, error) {
	return s.work.builds.checkBuild(ctx, c.Image, func(ctx context.Context) error { return s.build(ctx, pod, c) })
}

// build builds the image of container c of pod, records it (metrics, an
// event) and prunes the pod's older built images.
func (s *Syncer) build(ctx context.Context, pod string, c manifest.Container) error {
	if s.rt == nil {
		return fmt.Errorf("build image %s: %w: this engine does not build images", c.Image, hruntime.ErrBuild)
	}
	s.log.Info("building image", "pod", pod, "container", c.Name, "image", c.Image, "context", c.Build.Context)
	res, err := s.rt.Build(ctx, BuildSpec(pod, c))
	if errors.Is(ctx.Err(), context.Canceled) {
		// Stopped with its owner, not failed (a timeout is a failure).
		return err
	}
	if s.opts.OnBuild != nil {
		s.opts.OnBuild(res.Duration, err)
	}
	now := s.opts.Clock.Now()
	if err != nil {
		// The runtime hides the args in what it returns; the pod's error
		// is scrubbed again with its other values (apply.go).
		s.log.Warn("build failed", "pod", pod, "container", c.Name, "image", c.Image, "error", err)
		return err
	}
	msg := fmt.Sprintf("built image %s in %s", c.Image, res.Duration.Round(time.Millisecond))
	var note string
	if len(res.Skipped) > 0 {
		note = "not named " + strings.Join(res.Skipped, ", ") + ": another image has that name (not this pod's build)"
	}
	s.events.Record(eventlog.Event{Time: now, Type: eventlog.Build, Pod: pod, Container: c.Name, Reason: msg, Message: note})
	s.log.Info("built image", "pod", pod, "container", c.Name, "image", c.Image, "duration", res.Duration.Round(time.Millisecond))
	s.pruneBuilt(ctx, pod, c.Image)
	return nil
}

// buildSecrets are the values a build's error must not show: its args.
func buildSecrets(c manifest.Container) []string {
	var out []string
	for _, v := range c.Build.Args {
		out = append(out, v)
	}
	return out
}

// pruneBuilt removes the images built for pod but, for each of its
// containers (each built image's repository), the newest KeepBuilt, and
// every image a desired pod names (one about to be used by a container
// not created yet among them) or keep; the engine refuses to remove one a
// container uses (created, running or stopped), which stays. Failures are
// only logged.
func (s *Syncer) pruneBuilt(ctx context.Context, pod, keep string) {
	list, err := s.rt.ListBuilt(ctx, pod)
	if err != nil {
		s.log.Warn("prune built images", "pod", pod, "error", err)
		return
	}
	wanted := s.wantedImages()
	wanted[keep] = true
	kept := map[string]int{} // by repository
	for _, im := range list {
		repo, used := "", false
		for _, t := range im.Tags {
			if buildctx.IsBuilt(t) {
				repo, _, _ = strings.Cut(t, ":")
			}
			used = used || wanted[t]
		}
		if used || kept[repo] < KeepBuilt {
			kept[repo]++
			continue
		}
		refs := im.Refs
		if len(refs) == 0 {
			refs = im.Tags
		}
		if len(refs) == 0 {
			refs = []string{im.ID}
		}
		for _, t := range refs {
			err := s.rt.RemoveImage(ctx, t)
			switch {
			case errors.Is(err, hruntime.ErrConflict):
				s.log.Debug("built image in use, kept", "pod", pod, "image", t)
			case err != nil && !errors.Is(err, hruntime.ErrNotFound):
				s.log.Warn("prune built image", "pod", pod, "image", t, "error", err)
			case err == nil:
				s.log.Info("pruned built image", "pod", pod, "image", t)
			}
		}
	}
}

// wantedImages are the built images the desired pods name.
func (s *Syncer) wantedImages() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	// A rollback runs the last ready version's image again.
	pods := append(slices.Clip(s.desired.set.Pods), s.rollouts.GoodPods()...)
	for _, p := range pods {
		for _, c := range p.Manifest.Containers {
			if c.Build != nil {
				out[c.Image] = true
			}
		}
	}
	return out
}
