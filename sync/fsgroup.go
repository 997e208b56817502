package sync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hostlet/hostlet/internal/fsgroup"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
)

// ReasonFSGroup: the group of a pod's volume could not be changed to its
// fsGroup; nothing of the pod was stopped.
const ReasonFSGroup = "VolumeOwnershipNotChanged"

// errStepFSGroup is the step that changes the group of a pod's volumes.
var errStepFSGroup = errors.New("volume ownership change")

// VolumeOwners is what the engine tells for a pod's fsGroup: where a
// Docker volume's files are on the host (VolumeHostPath), and whether
// its containers see the host's owners and groups (SameHostIDs). An
// engine without it runs no pod with an fsGroup.
type VolumeOwners interface {
	VolumeHostPath(ctx context.Context, name string) (string, error)
	SameHostIDs() error
}

// changeVolumeGroups gives the pod's volumes to its fsGroup when the
// apply creates containers (fsgroup.Apply, per the pod's
// fsGroupChangePolicy), before anything of the pod is stopped, so a
// volume it cannot change fails the pod with its running version kept:
// its empty dirs and named Docker volumes (made first if they are not
// there), data folders and files volumes (read-only: group read). Host
// paths are left as they are, as Kubernetes leaves them.
func (ap *podApplication) changeVolumeGroups(ctx context.Context) error {
	if ap.m.FSGroup == nil || !ap.createsApp() {
		return nil
	}
	// A pass that only takes the init containers further: walked already.
	version := manifest.PodHash(ap.m)
	withInits := len(ap.m.InitContainers) > 0
	if withInits && ap.opts.Inits.walkedFor(ap.m.ID, version) {
		return nil
	}
	gid := *ap.m.FSGroup
	owners := ap.opts.VolumeOwners
	if owners == nil {
		owners, _ = ap.rt.(VolumeOwners)
	}
	if owners == nil {
		return fmt.Errorf("fsGroup %d: this engine does not tell where its volumes are on the host", gid)
	}
	if err := owners.SameHostIDs(); err != nil {
		return fmt.Errorf("fsGroup %d: %w", gid, err)
	}
	targets, err := ap.groupTargets(ctx, owners)
	if err != nil {
		return err
	}
	total := cmp.Or(ap.opts.FSGroupMaxEntries, fsgroup.DefaultMaxEntries)
	budget := total
	for _, tg := range targets {
		v := tg.volume
		policy := ap.m.FSGroupChangePolicy
		if v.Files != nil {
			// Written once, under a name of its content and group.
			policy = fsgroup.OnRootMismatch
		}
		o := fsgroup.Options{GID: int(gid), Policy: policy, ReadOnly: tg.readOnly, MaxEntries: max(budget, 1)}
		res, err := ap.walkVolume(ctx, v, tg.where, o)
		if errors.Is(err, fsgroup.ErrTooMany) {
			err = fmt.Errorf("%w: more than %d entries in the pod's volumes together: change their group by hand (chgrp -R %d, chmod -R g+rwX) and set fsGroupChangePolicy: OnRootMismatch", fsgroup.ErrTooMany, total, gid)
		}
		if err != nil {
			return fmt.Errorf("volume %s: fsGroup %d: %w", v.Name, gid, err)
		}
		budget -= res.Entries
		ap.log.Debug("volume given to the pod's fsGroup", "pod", ap.m.ID, "volume", v.Name, "fsGroup", gid, "entries", res.Entries, "skipped", res.Skipped)
	}
	if withInits {
		ap.opts.Inits.walkedNow(ap.m.ID, version)
	}
	return nil
}

// groupTarget is a volume to give to the pod's fsGroup: where its files
// are on the host, and whether every mount of it (under any of the pod's
// names for it) is read-only.
type groupTarget struct {
	volume   manifest.Volume
	where    string
	readOnly bool
}

// groupTargets are the pod's volumes to give to its fsGroup, one per
// place on the host (a volume named twice is walked once, read-only only
// if every mount of every name is): the mounted ones but host paths.
func (ap *podApplication) groupTargets(ctx context.Context, owners VolumeOwners) ([]groupTarget, error) {
	var out []groupTarget
	at := map[string]int{}
	for _, v := range ap.m.Volumes {
		readOnly, mounted := ap.mountedReadOnly(v.Name)
		if !mounted || v.HostPath != "" {
			continue
		}
		where, err := ap.volumeWhere(ctx, owners, v)
		if err != nil {
			return nil, fmt.Errorf("volume %s: fsGroup %d: %w", v.Name, *ap.m.FSGroup, err)
		}
		readOnly = readOnly || v.Files != nil // files: group read only
		if i, ok := at[where]; ok {
			out[i].readOnly = out[i].readOnly && readOnly
			continue
		}
		at[where] = len(out)
		out = append(out, groupTarget{volume: v, where: where, readOnly: readOnly})
	}
	return out, nil
}

// walkVolume gives volume v, at where (volumeWhere), to o's group: a data
// folder opened component by component, none followed if it is a link (a
// container of the pod's running version may swap one in meanwhile).
func (ap *podApplication) walkVolume(ctx context.Context, v manifest.Volume, where string, o fsgroup.Options) (fsgroup.Result, error) {
	if v.DataFolder == "" {
		return fsgroup.Apply(ctx, where, o)
	}
	f, err := ap.opts.DataFolders.Open(v.DataFolder)
	if err != nil {
		return fsgroup.Result{}, err
	}
	defer f.Close()
	return fsgroup.ApplyFile(ctx, f, o)
}

// mountedReadOnly reports whether a container of the pod (an init
// container too) mounts the volume named name, and whether every mount
// of it is read-only.
func (ap *podApplication) mountedReadOnly(name string) (readOnly, mounted bool) {
	readOnly = true
	for _, c := range slices.Concat(ap.m.Containers, ap.m.InitContainers) {
		for _, vm := range c.VolumeMounts {
			if vm.Name == name {
				mounted, readOnly = true, readOnly && vm.ReadOnly
			}
		}
	}
	return readOnly, mounted
}

// volumeWhere is where volume v's files are on this host: a files
// volume's copy (written already), a data folder (made: walkVolume opens
// it again without following links), a Docker volume's folder (the
// volume made, or an external one checked, first).
func (ap *podApplication) volumeWhere(ctx context.Context, owners VolumeOwners, v manifest.Volume) (string, error) {
	switch {
	case v.Files != nil:
		p := ap.copies[v.Files.Digest()]
		if p == "" {
			return "", fmt.Errorf("files %s were not written", v.Files.Source)
		}
		return p, nil
	case v.DataFolder != "":
		return ap.ensureDataFolder(v.DataFolder)
	}
	if err := ap.ensureVolume(ctx, v); err != nil {
		return "", err
	}
	name := v.DockerVolume
	if name == "" {
		name = podspec.VolumeName(ap.opts.Instance, ap.m.ID, v.Name)
	}
	return owners.VolumeHostPath(ctx, name)
}
