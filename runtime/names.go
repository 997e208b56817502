package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	gosync "sync"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// ErrNoOwnerKey: a container under a name its manifest chose needs the
// host's owner key (WithOwnerKey), which this Docker was not given.
var ErrNoOwnerKey = errors.New("no owner key to sign the container's chosen name with")

// signName sets the proof of the name spec's labels choose (LabelName),
// if any, on a copy of its labels: for the image spec names, as the
// engine resolves it now (one inspect).
func (d *Docker) signName(ctx context.Context, spec *ContainerSpec) error {
	chosen := spec.Labels[LabelName]
	if chosen == "" {
		return nil
	}
	if len(d.ownerKey) == 0 {
		return fmt.Errorf("name %q: %w", chosen, ErrNoOwnerKey)
	}
	img, err := d.cli.ImageInspect(ctx, spec.Image)
	if err != nil {
		return fmt.Errorf("name %q: inspect image %s: %w", chosen, spec.Image, translate(err))
	}
	labels := maps.Clone(spec.Labels)
	labels[LabelNameProof] = NameProof(d.ownerKey, d.instance, labels[LabelPod], labels[LabelContainer], chosen, img.ID)
	spec.Labels = labels
	spec.signedImage = img.ID
	return nil
}

// checkSigned checks that container id, created from spec, was made from
// the image its name proof is for: a pull of the same tag between the
// inspect and the create would leave a container no list proves
// hostlet's, holding the name. Such a container is removed.
func (d *Docker) checkSigned(ctx context.Context, id string, spec ContainerSpec) error {
	if spec.signedImage == "" {
		return nil
	}
	info, err := d.cli.ContainerInspect(ctx, id)
	if err == nil && strings.TrimPrefix(info.Image, "sha256:") == strings.TrimPrefix(spec.signedImage, "sha256:") {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("the image %s changed (a pull) between its name's proof and the create; made again at the next sync", spec.Image)
	}
	return d.removeCreated(ctx, id, fmt.Errorf("name %q: %w", spec.Labels[LabelName], err))
}

// namedIDs are the IDs of the containers proven under a chosen name: those
// of the last list and those created since. An event carries no image ID
// to check a proof with; it is proven by its container's ID in here. It is
// safe for concurrent use, and bounded by the containers there are.
type namedIDs struct {
	mu  gosync.Mutex
	ids map[string]bool
}

// listed replaces the IDs with a list's.
func (n *namedIDs) listed(ids map[string]bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ids = ids
}

// add adds a container created under a chosen name.
func (n *namedIDs) add(id string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ids == nil {
		n.ids = map[string]bool{}
	}
	n.ids[id] = true
}

// has reports whether id is a container proven under a chosen name.
func (n *namedIDs) has(id string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ids[id]
}

// Rename gives container id the name name. A name another container
// holds is ErrConflict.
func (d *Docker) Rename(ctx context.Context, id, name string) error {
	if err := d.cli.ContainerRename(ctx, id, name); err != nil {
		return fmt.Errorf("rename container %s to %q: %w", shortID(id), name, translate(err))
	}
	d.log.Debug("renamed container", "id", id, "name", name)
	return nil
}

// NameHolder returns the container that holds the name name, exactly (an
// ID that starts with name is not a holder), and "" when none does.
func (d *Docker) NameHolder(ctx context.Context, name string) (Holder, error) {
	info, err := d.cli.ContainerInspect(ctx, name)
	switch {
	case IsNotFound(translate(err)):
		return Holder{}, nil
	case err != nil:
		return Holder{}, fmt.Errorf("inspect the holder of container name %q: %w", name, translate(err))
	case strings.TrimPrefix(info.Name, "/") != name:
		return Holder{}, nil
	}
	h := Holder{ID: info.ID}
	if info.Config != nil {
		h.Image, h.Labels = info.Config.Image, info.Config.Labels
		h.Proven = d.owner().Proves(info.Name, info.Image, info.Config.Labels)
	}
	return h, nil
}

// Holder is the container holding a name.
type Holder struct {
	// ID is "" when no container holds the name.
	ID    string
	Image string
	// Proven: the container is this instance's (see Owner).
	Proven bool
	// Labels are the holder's labels.
	Labels map[string]string
}

// shortID is id as docker ps shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// ociPlatform is the create request's platform for p (os/arch[/variant]),
// nil for none.
func ociPlatform(p string) *ocispec.Platform {
	if p == "" {
		return nil
	}
	parts := strings.SplitN(p, "/", 3)
	out := &ocispec.Platform{OS: parts[0]}
	if len(parts) > 1 {
		out.Architecture = parts[1]
	}
	if len(parts) > 2 {
		out.Variant = parts[2]
	}
	return out
}
