package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/docker/docker/api/types/volume"
)

// EnsureVolume creates the named local volume unless it exists. labels are
// put on it together with io.hostlet.managed and io.hostlet.instance. An
// existing volume of that name that is not this instance's is an
// ErrConflict (it is never adopted).
func (d *Docker) EnsureVolume(ctx context.Context, name string, labels map[string]string) error {
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelManaged] = "true"
	l[LabelInstance] = d.instance
	// Creating a volume that exists returns the existing one, untouched.
	v, err := d.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Labels: l})
	if err != nil {
		return fmt.Errorf("ensure volume %q: %w", name, translate(err))
	}
	if v.Labels[LabelManaged] != "true" || v.Labels[LabelInstance] != d.instance {
		return fmt.Errorf("ensure volume %q: %w", name,
			classify(fmt.Errorf("volume exists and does not belong to hostlet instance %q", d.instance), ErrConflict))
	}
	return nil
}

// RemoveVolume removes the named volume. A missing volume is not an error;
// a volume still used by a container is an ErrConflict.
func (d *Docker) RemoveVolume(ctx context.Context, name string) error {
	err := d.cli.VolumeRemove(ctx, name, false)
	if err == nil {
		d.log.Debug("removed volume", "volume", name)
		return nil
	}
	if err := translate(err); !IsNotFound(err) {
		return fmt.Errorf("remove volume %q: %w", name, err)
	}
	return nil
}

// ListVolumes returns the names of this instance's managed volumes, sorted,
// with one engine call.
func (d *Docker) ListVolumes(ctx context.Context) ([]string, error) {
	resp, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: d.ownFilter()})
	if err != nil {
		return nil, fmt.Errorf("list volumes of instance %q: %w", d.instance, translate(err))
	}
	names := make([]string, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		if v != nil {
			names = append(names, v.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
