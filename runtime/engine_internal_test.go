package runtime

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
)

type infoReader struct {
	version types.Version
	info    system.Info
	infoErr error
}

func (r infoReader) ServerVersion(context.Context) (types.Version, error) { return r.version, nil }
func (r infoReader) Info(context.Context) (system.Info, error)            { return r.info, r.infoErr }
func (r infoReader) ClientVersion() string                                { return "1.44" }

// TestDetectEngineSaysWhenPodmanRunsNoHealthchecks: a Podman without
// systemd (cgroupfs) and a Podman whose /info is refused each carry a
// limit in /status saying what becomes of healthchecks; Docker carries
// none, and its builder and image store are read.
func TestDetectEngineSaysWhenPodmanRunsNoHealthchecks(t *testing.T) {
	podman := types.Version{Version: "5.8.6", Components: []types.ComponentVersion{{Name: "Podman Engine", Version: "5.8.6"}}}
	docker := types.Version{Version: "28.5.2", Components: []types.ComponentVersion{{Name: "Engine", Version: "28.5.2"}}}
	cases := []struct {
		name        string
		r           infoReader
		builder     build.BuilderVersion
		wantKind    string
		wantBuilder string
		wantLimit   string
	}{
		{"podman without systemd", infoReader{version: podman, info: system.Info{CgroupDriver: "cgroupfs"}}, "", EnginePodman, "buildah", limitHealthcheckTimers},
		{"podman with systemd", infoReader{version: podman, info: system.Info{CgroupDriver: "systemd", LoggingDriver: "journald"}}, "", EnginePodman, "buildah", ""},
		{"podman behind a proxy refusing /info", infoReader{version: podman, infoErr: errors.New("403 forbidden")}, "", EnginePodman, "buildah", limitHealthcheckUnknown},
		{"docker with buildkit", infoReader{version: docker, info: system.Info{CgroupDriver: "systemd", LoggingDriver: "local"}}, build.BuilderBuildKit, EngineDocker, "buildkit", ""},
		{"docker, info refused", infoReader{version: docker, infoErr: errors.New("403 forbidden")}, build.BuilderV1, EngineDocker, "classic", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := detectEngine(t.Context(), c.r, c.builder)
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != c.wantKind || e.Builder != c.wantBuilder {
				t.Errorf("kind %s, builder %s; want %s, %s", e.Kind, e.Builder, c.wantKind, c.wantBuilder)
			}
			if c.wantLimit == "" && len(e.Limits) != 0 || c.wantLimit != "" && !slices.Contains(e.Limits, c.wantLimit) {
				t.Errorf("limits %q, want %q", e.Limits, c.wantLimit)
			}
			if e.LogDriver != c.r.info.LoggingDriver {
				t.Errorf("default log driver %q, want %q (the engine's info)", e.LogDriver, c.r.info.LoggingDriver)
			}
		})
	}
}

// TestEnginePlatformNamesArchitecturesAsImagesDo: the kernel's names
// (Docker's info) and Go's (Podman's) give the platform images name.
func TestEnginePlatformNamesArchitecturesAsImagesDo(t *testing.T) {
	for _, tc := range []struct{ os, arch, want string }{
		{"linux", "x86_64", "linux/amd64"}, {"linux", "amd64", "linux/amd64"},
		{"linux", "aarch64", "linux/arm64"}, {"linux", "armv7l", "linux/arm"},
		{"linux", "", ""}, {"", "x86_64", ""},
	} {
		if got := enginePlatform(tc.os, tc.arch); got != tc.want {
			t.Errorf("enginePlatform(%q, %q) = %q, want %q", tc.os, tc.arch, got, tc.want)
		}
	}
}

// TestDetectEngineSaysWhenItIsRootless: an engine whose info's security
// options name rootless is rootless, one naming userns remaps its users
// (a pod's fsGroup cannot be given on either); a rootful one is neither,
// and of one whose info is refused it is not known, so SameHostIDs
// refuses it too.
func TestDetectEngineSaysWhenItIsRootless(t *testing.T) {
	docker := types.Version{Version: "28.5.2"}
	podman := types.Version{Version: "5.8.6", Components: []types.ComponentVersion{{Name: "Podman Engine", Version: "5.8.6"}}}
	cases := []struct {
		name   string
		r      infoReader
		want   bool
		remaps bool
	}{
		{"rootful docker", infoReader{version: docker, info: system.Info{SecurityOptions: []string{"name=apparmor", "name=seccomp,profile=builtin"}}}, false, false},
		{"rootless docker", infoReader{version: docker, info: system.Info{SecurityOptions: []string{"name=seccomp,profile=builtin", "name=rootless", "name=cgroupns"}}}, true, false},
		{"rootless podman", infoReader{version: podman, info: system.Info{SecurityOptions: []string{"name=rootless"}}}, true, false},
		{"info refused", infoReader{version: docker, infoErr: errors.New("403 forbidden")}, false, false},
		{"docker with userns-remap", infoReader{version: docker, info: system.Info{SecurityOptions: []string{"name=seccomp,profile=builtin", "name=userns"}}}, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := detectEngine(t.Context(), c.r, "")
			if err != nil {
				t.Fatal(err)
			}
			if e.Rootless != c.want || e.UsernsRemap != c.remaps {
				t.Errorf("rootless %v, userns-remap %v; want %v, %v", e.Rootless, e.UsernsRemap, c.want, c.remaps)
			}
			d := &Docker{engine: e, cli: unixClient(t)}
			if err := d.SameHostIDs(); (err == nil) != (!c.want && !c.remaps && c.r.infoErr == nil) {
				t.Errorf("SameHostIDs: %v", err)
			}
		})
	}
}

// unixClient is a client of an engine at a unix socket it never calls.
func unixClient(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.WithHost("unix:///run/hostlet-test-none.sock"))
	if err != nil {
		t.Fatal(err)
	}
	return cli
}
