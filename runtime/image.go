package runtime

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/client"
)

// Image pull policies: the manifest's imagePullPolicy values (the manifest
// package fills in the default before a spec reaches the runtime).
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"
)

// EnsureImage makes image available on the engine according to pullPolicy,
// one of the manifest's imagePullPolicy values:
//
//   - Never: the image must be present; otherwise the error matches
//     ErrImageNeverPull and ErrNotFound.
//   - IfNotPresent: pull only when the image is not present.
//   - Always: pull.
//
// Pull failures match ErrImagePull and carry the engine's message (which
// arrives inside the progress stream, not as the call's error). Concurrent
// pulls of one image share one engine request; a caller whose ctx ends stops
// waiting, while the shared pull runs on for the others. The engine request
// is cancelled when its last caller stops waiting: a pull never outlives
// every caller's deadline (sync.pullTimeout bounds the syncer's).
func (d *Docker) EnsureImage(ctx context.Context, ref, pullPolicy string) error {
	switch pullPolicy {
	case PullNever, PullIfNotPresent:
		present, err := d.imagePresent(ctx, ref)
		if err != nil {
			return err
		}
		if present {
			return nil
		}
		if pullPolicy == PullNever {
			return classify(fmt.Errorf("image %s not present and imagePullPolicy is Never", ref), ErrImageNeverPull, ErrNotFound)
		}
	case PullAlways:
	default:
		return fmt.Errorf("ensure image %s: unknown imagePullPolicy %q", ref, pullPolicy)
	}
	return d.pull(ctx, ref)
}

// ImageUser is the user image ref runs its process as (its config's
// USER, "" for root by default).
func (d *Docker) ImageUser(ctx context.Context, ref string) (string, error) {
	insp, err := d.cli.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("inspect image %s: %w", ref, translate(err))
	}
	if insp.Config == nil {
		return "", nil
	}
	return insp.Config.User, nil
}

// imagePresent reports whether the engine has the image.
func (d *Docker) imagePresent(ctx context.Context, ref string) (bool, error) {
	_, err := d.cli.ImageInspect(ctx, ref)
	if err == nil {
		return true, nil
	}
	if err := translate(err); !IsNotFound(err) {
		return false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return false, nil
}

// pull pulls ref, sharing one engine request among concurrent callers.
func (d *Docker) pull(ctx context.Context, ref string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("pull image %s: %w", ref, classify(err, ErrImagePull))
	}
	named = reference.TagNameOnly(named)
	if err := d.pulls.do(ctx, named.String(), func(pctx context.Context) error { return d.doPull(pctx, named) }); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pull image %s: %w", ref, ctx.Err())
		}
		return err
	}
	return nil
}

// pullGroup shares one engine pull per image among concurrent callers. The
// pull must not fail because the caller that happened to start it went
// away, so it runs on while any caller waits; when the last one stops
// waiting it is cancelled, and the next caller starts a new one. Its
// goroutine ends when the pull does.
type pullGroup struct {
	mu    sync.Mutex
	pulls map[string]*sharedPull
}

// maxPullTime caps every engine pull, whatever its callers' deadlines.
const maxPullTime = time.Hour

type sharedPull struct {
	done    chan struct{}
	err     error // set before done is closed
	waiters int
	cancel  context.CancelFunc
}

// do runs fn once for key for every caller that comes while it runs, and
// returns its error, or ctx's when ctx ends first.
func (g *pullGroup) do(ctx context.Context, key string, fn func(context.Context) error) error {
	g.mu.Lock()
	if g.pulls == nil {
		g.pulls = map[string]*sharedPull{}
	}
	p := g.pulls[key]
	if p == nil {
		// Cancelled with its last waiter; capped for callers without a
		// deadline of their own.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxPullTime)
		p = &sharedPull{done: make(chan struct{}), cancel: cancel}
		g.pulls[key] = p
		go func() {
			defer cancel()
			err := fn(pctx)
			g.mu.Lock()
			if g.pulls[key] == p {
				delete(g.pulls, key)
			}
			p.err = err
			g.mu.Unlock()
			close(p.done)
		}()
	}
	p.waiters++
	g.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		if p.waiters--; p.waiters == 0 {
			p.cancel()
			if g.pulls[key] == p {
				delete(g.pulls, key)
			}
		}
		return ctx.Err()
	}
}

func (d *Docker) doPull(ctx context.Context, named reference.Named) error {
	ref := reference.FamiliarString(named)
	auth, err := registryAuth(d.configDir, reference.Domain(named))
	if err != nil {
		// Anonymous pulls may still work; say why credentials were not used.
		d.log.Warn("registry credentials not used", "image", ref, "error", err)
	}
	start := d.clock.Now()
	d.log.Info("pulling image", "image", ref)
	rc, err := d.cli.ImagePull(ctx, named.String(), image.PullOptions{RegistryAuth: auth})
	if err != nil {
		return fmt.Errorf("pull image %s: %w", ref, classify(translate(err), ErrImagePull))
	}
	defer rc.Close()
	if err := readJSONStream(rc); err != nil {
		return fmt.Errorf("pull image %s: %w", ref, classify(err, ErrImagePull))
	}
	d.log.Info("pulled image", "image", ref, "duration", d.clock.Since(start).Round(time.Millisecond))
	return nil
}

// jsonMessage is the part of the engine's progress stream messages that
// matters here: errors arrive inside the stream.
type jsonMessage struct {
	Error       string `json:"error"`
	ErrorDetail *struct {
		Message string `json:"message"`
	} `json:"errorDetail"`
}

// readJSONStream reads a pull/load progress stream to its end and returns
// the first error reported inside it.
func readJSONStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	var first error
	for {
		var m jsonMessage
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return first
		}
		if err != nil {
			if first != nil {
				return first
			}
			return fmt.Errorf("read engine progress stream: %w", err)
		}
		if first != nil {
			continue
		}
		if m.ErrorDetail != nil && m.ErrorDetail.Message != "" {
			first = errors.New(m.ErrorDetail.Message)
		} else if m.Error != "" {
			first = errors.New(m.Error)
		}
	}
}

// registryAuth returns the X-Registry-Auth value for a registry host from
// the `auths` section of configDir/config.json, or "" when there is none.
// Credential helpers (credsStore, credHelpers) are not supported.
func registryAuth(configDir, domain string) (string, error) {
	if configDir == "" {
		return "", nil
	}
	path := filepath.Join(configDir, "config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read docker config: %w", err)
	}
	var cfg struct {
		Auths map[string]struct {
			Auth          string `json:"auth"`
			IdentityToken string `json:"identitytoken"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("parse docker config %s: %w", path, err)
	}
	want := []string{domain}
	if domain == "docker.io" {
		// Docker Hub credentials live under its legacy index address.
		want = []string{"docker.io", "index.docker.io", "registry-1.docker.io"}
	}
	for key, entry := range cfg.Auths {
		if !matchRegistry(key, want) {
			continue
		}
		ac := registry.AuthConfig{ServerAddress: key, IdentityToken: entry.IdentityToken}
		if entry.Auth != "" {
			raw, err := base64.StdEncoding.DecodeString(entry.Auth)
			if err != nil {
				return "", fmt.Errorf("decode auth for %s in %s: %w", key, path, err)
			}
			user, pass, ok := strings.Cut(string(raw), ":")
			if !ok {
				return "", fmt.Errorf("decode auth for %s in %s: not user:password", key, path)
			}
			ac.Username, ac.Password = user, pass
		}
		enc, err := registry.EncodeAuthConfig(ac)
		if err != nil {
			return "", fmt.Errorf("encode auth for %s: %w", key, err)
		}
		return enc, nil
	}
	return "", nil
}

// matchRegistry reports whether a config.json auths key ("host",
// "https://host/v1/", ...) names one of the hosts.
func matchRegistry(key string, hosts []string) bool {
	h := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	h, _, _ = strings.Cut(h, "/")
	for _, w := range hosts {
		if strings.EqualFold(h, w) {
			return true
		}
	}
	return false
}

// LoadImage loads a docker-archive tar (as `docker load` does) and returns
// any error the engine reports inside its response stream.
func (d *Docker) LoadImage(ctx context.Context, tar io.Reader) error {
	return LoadArchive(ctx, d.cli, tar)
}

// ImageLoader is what LoadArchive uses of an engine client.
type ImageLoader interface {
	ImageLoad(ctx context.Context, input io.Reader, opts ...client.ImageLoadOption) (image.LoadResponse, error)
}

// LoadArchive loads a docker-archive tar through cli (as `docker load`
// does) and returns any error the engine reports inside its response
// stream. Tools and tests that hold a bare engine client use it too.
func LoadArchive(ctx context.Context, cli ImageLoader, tar io.Reader) error {
	resp, err := cli.ImageLoad(ctx, tar, client.ImageLoadWithQuiet(true))
	if err != nil {
		return fmt.Errorf("load image archive: %w", translate(err))
	}
	defer resp.Body.Close()
	if !resp.JSON {
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return fmt.Errorf("load image archive: read response: %w", err)
		}
		return nil
	}
	if err := readJSONStream(resp.Body); err != nil {
		return fmt.Errorf("load image archive: %w", err)
	}
	return nil
}

// RemoveImage removes an image reference (untagging it when other tags
// remain). A missing image is an ErrNotFound; an image used by a container
// is an ErrConflict. When the image itself went and the engine builds
// with BuildKit, the build cache no image uses any more goes with it
// (pruneDanglingBuildCache).
func (d *Docker) RemoveImage(ctx context.Context, ref string) error {
	built := d.builtHere(ctx, ref)
	gone, err := d.cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true})
	if err != nil {
		return fmt.Errorf("remove image %s: %w", ref, translate(err))
	}
	if built && slices.ContainsFunc(gone, func(r image.DeleteResponse) bool { return r.Deleted != "" }) {
		d.pruneDanglingBuildCache(ctx, ref)
	}
	return nil
}

// builtHere reports whether ref is an image this instance built with
// BuildKit (the only removal after which its build cache is pruned: a
// pause image, or one built elsewhere, leaves the cache alone).
func (d *Docker) builtHere(ctx context.Context, ref string) bool {
	if d.engine.Builder != "buildkit" {
		return false
	}
	insp, err := d.cli.ImageInspect(ctx, ref)
	return err == nil && insp.Config != nil && insp.Config.Labels[LabelBuildInstance] == d.instance
}

// pruneDanglingBuildCache removes the BuildKit cache records no image
// and no running build uses (what `docker builder prune` removes, for
// every user of the engine: records only a cache, which a later build
// makes again): a
// BuildKit build keeps its context's files and its layers there after
// the image is gone, and neither Debian's 20.10 (no builder.gc) nor a
// later engine's collector (by size and age) removes them soon. Records
// an image still uses, and the engine's internal ones, stay. Nothing is
// done on an engine whose builds are classic: its intermediate images
// went with the image. A failure is logged: the image is gone either way.
func (d *Docker) pruneDanglingBuildCache(ctx context.Context, ref string) {
	report, err := d.cli.BuildCachePrune(ctx, build.CachePruneOptions{})
	if err != nil {
		d.log.Warn("build cache not pruned after a built image was removed", "image", ref, "error", translate(err))
		return
	}
	if report != nil && report.SpaceReclaimed > 0 {
		d.log.Debug("build cache pruned after a built image was removed", "image", ref, "records", len(report.CachesDeleted), "bytes", report.SpaceReclaimed)
	}
}
