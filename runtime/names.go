package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
)

// ErrNoOwnerKey: a container under a name its manifest chose needs the
// host's owner key (WithOwnerKey), which this Docker was not given.
var ErrNoOwnerKey = errors.New("no owner key to sign the container's chosen name with")

// signName sets the proof of the name spec's labels choose (LabelName),
// if any, on a copy of its labels.
func (d *Docker) signName(spec *ContainerSpec) error {
	chosen := spec.Labels[LabelName]
	if chosen == "" {
		return nil
	}
	if len(d.ownerKey) == 0 {
		return fmt.Errorf("name %q: %w", chosen, ErrNoOwnerKey)
	}
	labels := maps.Clone(spec.Labels)
	labels[LabelNameProof] = NameProof(d.ownerKey, d.instance, labels[LabelPod], labels[LabelContainer], chosen)
	spec.Labels = labels
	return nil
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
		h.Image = info.Config.Image
		h.Proven = d.owner().Proves(info.Name, info.Config.Labels)
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
}

// shortID is id as docker ps shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
