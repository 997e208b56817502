package runtime

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/docker/api/types/container"
)

// maxImageConfig bounds an image config read from a saved image: real
// ones are a few KiB; a larger JSON file in the archive is not read.
const maxImageConfig = 4 << 20

// savedTriggers reads the ONBUILD triggers of image ref from the image
// itself, saved as a docker-archive: Podman's image inspect never shows
// them (Config.OnBuild is null even for an image whose triggers its
// builder runs), so hostlet's check of a base image's triggers reads the
// image's config as the builder does. The layers stream past unread; the
// config and manifest.json are small JSON files of the archive.
func (d *Docker) savedTriggers(ctx context.Context, ref string) ([]string, error) {
	rc, err := d.cli.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, fmt.Errorf("save image %s to read its config: %w", ref, translate(err))
	}
	defer rc.Close()
	triggers, err := archiveTriggers(rc)
	if err != nil {
		return nil, fmt.Errorf("read the config of image %s from its saved archive: %w", ref, err)
	}
	return triggers, nil
}

// archiveTriggers reads a docker-archive (as `docker save` writes it):
// manifest.json names one config, whose config.OnBuild it returns.
func archiveTriggers(r io.Reader) ([]string, error) {
	jsons := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read the archive: %w", err)
		}
		name := path.Clean(h.Name)
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(name, ".json") || h.Size > maxImageConfig {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxImageConfig))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		jsons[name] = b
	}
	var manifest []struct{ Config string }
	if err := json.Unmarshal(jsons["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(manifest) != 1 || manifest[0].Config == "" {
		return nil, fmt.Errorf("manifest.json names %d images, want 1", len(manifest))
	}
	raw, ok := jsons[path.Clean(manifest[0].Config)]
	if !ok {
		return nil, fmt.Errorf("config %s: not in the archive", manifest[0].Config)
	}
	var config struct {
		Config struct{ OnBuild []string } `json:"config"`
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		return nil, fmt.Errorf("config %s: %w", manifest[0].Config, err)
	}
	return config.Config.OnBuild, nil
}

// familiarImage is an image name Podman answered (podman) as Docker
// shows it: without the docker.io/ and docker.io/library/ Podman writes
// out, and without the localhost/ it gives a name that has no registry
// ("hostlet-build/x:1", not "localhost/hostlet-build/x:1"). Docker's
// names, and a name that does not parse, are returned as they are.
func familiarImage(name string, podman bool) string {
	if !podman {
		return name
	}
	name = strings.TrimPrefix(name, "localhost/")
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return name
	}
	return reference.FamiliarString(named)
}

// CgroupPath is the cgroup path of running container id, as the kernel
// names it in /proc/<pid>/cgroup of the container's first process (the
// path cAdvisor names a container by): it depends on the engine and its
// cgroup driver (/docker/<id>, /system.slice/docker-<id>.scope,
// /libpod_parent/libpod-<id>, /machine.slice/libpod-<id>.scope, under a
// configured parent). hostlet must see the host's /proc.
func (d *Docker) CgroupPath(ctx context.Context, id string) (string, error) {
	insp, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return "", fmt.Errorf("inspect container %s: %w", id, translate(err))
	}
	if insp.State == nil || insp.State.Pid <= 0 {
		return "", fmt.Errorf("container %s: not running (no process to read the cgroup of)", id)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", insp.State.Pid))
	if err != nil {
		return "", fmt.Errorf("container %s: read its cgroup: %w", id, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", fmt.Errorf("container %s: read its cgroup: %w", id, err)
	}
	p, ok := cgroupPathOf(string(b))
	if !ok {
		return "", fmt.Errorf("container %s: no memory cgroup in /proc/%d/cgroup", id, insp.State.Pid)
	}
	// Every engine names the container's cgroup after its ID: a path
	// that does not is another process's (the PID was reused).
	if !strings.Contains(p, insp.ID) {
		return "", fmt.Errorf("container %s: process %d is in cgroup %s, not the container's (it ended?)", id, insp.State.Pid, p)
	}
	return p, nil
}

// cgroupPathOf reads a /proc/<pid>/cgroup: the unified hierarchy's path
// ("0::/path") on cgroup v2, else the memory controller's
// ("N:...memory...:/path") on v1 and hybrid layouts.
func cgroupPathOf(procCgroup string) (string, bool) {
	unified := ""
	for line := range strings.Lines(procCgroup) {
		parts := strings.SplitN(strings.TrimRight(line, "\n"), ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "memory") {
			return parts[2], true
		}
		if parts[0] == "0" && parts[1] == "" {
			unified = parts[2]
		}
	}
	return unified, unified != ""
}

// removeCreated removes container id, just created and found wrong (err
// says how), and returns err with the removal's failure, if any.
func (d *Docker) removeCreated(ctx context.Context, id string, err error) error {
	if rmErr := d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true}); rmErr != nil {
		return fmt.Errorf("%w (and remove it: %w)", err, translate(rmErr))
	}
	return err
}

// ErrSettingIgnored: the engine made a container without a setting it
// was given, or with another value. Create removes the container and returns it, naming the
// setting: the pod fails to create, with that reason.
var ErrSettingIgnored = errors.New("the engine ignored a setting")

// checkApplied reads container id back and compares the settings an
// engine has been seen to drop silently with what was asked (want).
func (d *Docker) checkApplied(ctx context.Context, id string, wantCfg *container.Config, want *container.HostConfig) error {
	insp, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("inspect the container created: %w", translate(err))
	}
	if insp.Config != nil && insp.Config.Domainname != wantCfg.Domainname {
		// Podman's compatible API drops it.
		return fmt.Errorf("%w: domainname: asked %q, got %q (%s %s): hostlet does not run a container without a setting it was given", ErrSettingIgnored, wantCfg.Domainname, insp.Config.Domainname, d.engine.Kind, d.engine.Version)
	}
	if insp.HostConfig == nil {
		return nil
	}
	if s := ignoredSetting(want, insp.HostConfig); s != "" {
		return fmt.Errorf("%w: %s (%s %s): hostlet does not run a container without a setting it was given", ErrSettingIgnored, s, d.engine.Kind, d.engine.Version)
	}
	return nil
}

// ignoredSetting names the first setting of want that got is without or
// has otherwise ("ulimits[nofile]: asked 1024:2048, got none"), or "" when
// every one holds. Sysctls are not compared: Podman applies them but its
// inspect never reports them (the container's /proc/sys has them).
func ignoredSetting(want, got *container.HostConfig) string {
	for _, dev := range want.Devices {
		if dev.CgroupPermissions == "" || dev.CgroupPermissions == "rwm" {
			continue
		}
		i := slices.IndexFunc(got.Devices, func(g container.DeviceMapping) bool {
			return g.PathOnHost == dev.PathOnHost && g.PathInContainer == dev.PathInContainer
		})
		if i < 0 || got.Devices[i].CgroupPermissions != dev.CgroupPermissions {
			// Podman's compatible API answers none: it gave rwm.
			return fmt.Sprintf("devices[%s:%s]: asked permissions %s, got %s", dev.PathOnHost, dev.PathInContainer, dev.CgroupPermissions, devicePermissions(got.Devices, i))
		}
	}
	for _, u := range want.Ulimits {
		i := slices.IndexFunc(got.Ulimits, func(g *container.Ulimit) bool { return g != nil && UlimitName(g.Name) == UlimitName(u.Name) })
		switch {
		case i < 0:
			return fmt.Sprintf("ulimits[%s]: asked %d:%d, got none", u.Name, u.Soft, u.Hard)
		case got.Ulimits[i].Soft != u.Soft || got.Ulimits[i].Hard != u.Hard:
			return fmt.Sprintf("ulimits[%s]: asked %d:%d, got %d:%d", u.Name, u.Soft, u.Hard, got.Ulimits[i].Soft, got.Ulimits[i].Hard)
		}
	}
	return ""
}

// UlimitName is a ulimit's name as Docker spells it ("nofile"): Podman
// answers the kernel's name ("RLIMIT_NOFILE").
func UlimitName(name string) string {
	return strings.ToLower(strings.TrimPrefix(strings.ToUpper(name), "RLIMIT_"))
}

// clearJoinedIPs clears the address Podman lists under each app
// container of a pod that has an infra container: its list says neither
// that the container joins the infra's network namespace (its network
// mode is empty there) nor that the address is the infra's, which it
// is.
func clearJoinedIPs(listed []Container) {
	infraIP := map[string]string{}
	for _, c := range listed {
		if c.Slot() == InfraName && c.IP != "" {
			infraIP[c.Pod()] = c.IP
		}
	}
	for i := range listed {
		c := &listed[i]
		if c.Slot() != InfraName && c.IP != "" && c.IP == infraIP[c.Pod()] {
			c.IP = ""
		}
	}
}

// devicePermissions says what the engine reports of device i (-1: the
// device is missing).
func devicePermissions(devices []container.DeviceMapping, i int) string {
	switch {
	case i < 0:
		return "no such device"
	case devices[i].CgroupPermissions == "":
		return "none reported (the engine gives rwm)"
	}
	return devices[i].CgroupPermissions
}
