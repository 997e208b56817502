package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
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
	opts := volume.CreateOptions{Name: name, Labels: l}
	if gid := l[LabelFSGroup]; gid != "" && d.engine.Podman() {
		// The volume's group: Podman then leaves its owner alone at
		// first use (WithVolumeNoChown) and mounts nothing for it.
		opts.DriverOpts = map[string]string{"o": "gid=" + gid}
	}
	// Creating a volume that exists returns the existing one, untouched.
	v, err := d.cli.VolumeCreate(ctx, opts)
	if err != nil {
		return fmt.Errorf("ensure volume %q: %w", name, translate(err))
	}
	if v.Labels[LabelManaged] != "true" || v.Labels[LabelInstance] != d.instance {
		// After an engine restart, creating a volume that exists may
		// answer without its labels (seen with Docker 20.10): ask for
		// the volume itself before calling it someone else's.
		if iv, err := d.cli.VolumeInspect(ctx, name); err == nil {
			v = iv
		}
	}
	if v.Labels[LabelManaged] != "true" || v.Labels[LabelInstance] != d.instance {
		return fmt.Errorf("ensure volume %q: %w", name,
			classify(fmt.Errorf("volume exists and does not belong to hostlet instance %q", d.instance), ErrConflict))
	}
	return nil
}

// CheckVolume reports whether the named volume is there: nil, or an
// ErrNotFound.
func (d *Docker) CheckVolume(ctx context.Context, name string) error {
	if _, err := d.cli.VolumeInspect(ctx, name); err != nil {
		return fmt.Errorf("volume %q: %w", name, translate(err))
	}
	return nil
}

// VolumeHostPath is the folder on this host holding the named volume's
// files, for hostlet to change their group there (a pod's fsGroup). Only
// a rootful engine reached through a unix socket, and a volume of the
// local driver, keep them where hostlet can: any other is an error
// saying which, never a path the containers do not see.
func (d *Docker) VolumeHostPath(ctx context.Context, name string) (string, error) {
	if err := d.SameHostIDs(); err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	v, err := d.cli.VolumeInspect(ctx, name)
	if err != nil {
		return "", fmt.Errorf("volume %q: %w", name, translate(err))
	}
	if v.Driver != "local" {
		return "", fmt.Errorf("volume %q: driver %s keeps its files out of hostlet's reach (only the local driver's are on this host)", name, v.Driver)
	}
	if o := v.Options; o["type"] != "" || o["device"] != "" {
		return "", fmt.Errorf("volume %q: a local volume mounting %s (type %s) is not changed: its files are another file system's", name, o["device"], o["type"])
	}
	if v.Mountpoint == "" || !filepath.IsAbs(v.Mountpoint) {
		return "", fmt.Errorf("volume %q: the engine gives no folder on the host (mountpoint %q)", name, v.Mountpoint)
	}
	return v.Mountpoint, nil
}

// SameHostIDs is nil when files hostlet changes on this host are seen in
// containers with the same owner and group: a rootful engine reached
// through a unix socket (on this host). Else it says why not.
func (d *Docker) SameHostIDs() error {
	if host := d.cli.DaemonHost(); !strings.HasPrefix(host, "unix://") {
		return fmt.Errorf("the engine at %s may be another host's: hostlet cannot change its files", host)
	}
	if d.engine.noInfo {
		return errors.New("the engine did not give its info, so hostlet cannot tell whether it is rootless (a group on the host would be another in its containers)")
	}
	if d.engine.Rootless {
		return errors.New("the engine is rootless: a group on the host is another group in its containers (user namespace)")
	}
	if d.engine.UsernsRemap {
		return errors.New("the engine remaps its containers' users (userns-remap): a group on the host is another group in its containers")
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

// VolumeInfo is one of this instance's volumes and who mounts it.
type VolumeInfo struct {
	Name string `json:"name"`
	// Persistent: a pod's named Docker volume (dockerVolume), kept until
	// removed on request; else a pod's empty-dir volume, removed with it.
	Persistent bool `json:"persistent"`
	// Pod is the pod an empty-dir volume belongs to.
	Pod string `json:"pod,omitempty"`
	// UsedBy names the containers (any state) that mount it.
	UsedBy []string `json:"usedBy"`
	// Path is a data folder's path on the host ("" for a Docker volume);
	// SizeBytes the size of its files (Partial: counted in part).
	Path      string `json:"path,omitempty"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
	Partial   bool   `json:"partial,omitempty"`
}

// Volumes lists this instance's volumes, sorted, with the containers that
// mount each: two engine calls.
func (d *Docker) Volumes(ctx context.Context) ([]VolumeInfo, error) {
	resp, err := d.cli.VolumeList(ctx, volume.ListOptions{Filters: d.ownFilter()})
	if err != nil {
		return nil, fmt.Errorf("list volumes of instance %q: %w", d.instance, translate(err))
	}
	users, err := d.volumeUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]VolumeInfo, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		if v == nil {
			continue
		}
		out = append(out, VolumeInfo{
			Name: v.Name, Persistent: v.Labels[LabelPersistent] == "true", Pod: v.Labels[LabelPod],
			UsedBy: append([]string{}, users[v.Name]...),
		})
	}
	slices.SortFunc(out, func(a, b VolumeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// volumeUsers maps a volume name to the names of the containers, of any
// instance, that mount it.
func (d *Docker) volumeUsers(ctx context.Context) (map[string][]string, error) {
	return d.mountUsers(ctx, func(m container.MountPoint) string { return m.Name })
}

// BindUsers maps the source of every bind mount on the engine to the
// names of the containers, of any instance and state, that mount it.
func (d *Docker) BindUsers(ctx context.Context) (map[string][]string, error) {
	return d.mountUsers(ctx, func(m container.MountPoint) string {
		if m.Type != mount.TypeBind {
			return ""
		}
		return m.Source
	})
}

// mountUsers maps key of each mount ("" skips it) to the names of the
// containers that have it: one engine call.
func (d *Docker) mountUsers(ctx context.Context, key func(container.MountPoint) string) (map[string][]string, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", translate(err))
	}
	users := map[string][]string{}
	for _, c := range list {
		name := strings.TrimPrefix(firstOr(c.Names, c.ID), "/")
		for _, m := range c.Mounts {
			if k := key(m); k != "" {
				users[k] = append(users[k], name)
			}
		}
	}
	return users, nil
}

func firstOr(list []string, def string) string {
	if len(list) > 0 {
		return list[0]
	}
	return def
}

// RemoveOwnVolume removes a volume of this instance on request (`hostlet
// volumes rm`): one that is not this instance's is an ErrConflict and is
// left; one a container mounts is an ErrConflict, as the engine answers.
func (d *Docker) RemoveOwnVolume(ctx context.Context, name string) error {
	v, err := d.cli.VolumeInspect(ctx, name)
	if err != nil {
		return fmt.Errorf("volume %q: %w", name, translate(err))
	}
	if v.Labels[LabelManaged] != "true" || v.Labels[LabelInstance] != d.instance {
		return fmt.Errorf("volume %q: %w", name, classify(fmt.Errorf("not a volume of hostlet instance %q; left alone", d.instance), ErrConflict))
	}
	if err := d.cli.VolumeRemove(ctx, name, false); err != nil {
		return fmt.Errorf("remove volume %q: %w", name, translate(err))
	}
	return nil
}
