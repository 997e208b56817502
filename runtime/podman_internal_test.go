package runtime

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
)

// dockerArchive is a docker-archive holding files (name → content), in
// order, as `docker save` and Podman's /images/get write it.
func dockerArchive(t testing.TB, files ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSavedImageTriggersAreReadFromItsConfig(t *testing.T) {
	const config = `{"architecture":"amd64","config":{"Labels":{"a":"b"},"OnBuild":["ADD http://127.0.0.1:1/x /x","RUN id"]}}`
	manifest := `[{"Config":"abc.json","RepoTags":["base:1"],"Layers":["l1/layer.tar"]}]`
	for _, tc := range []struct {
		name    string
		archive []byte
		want    []string
		err     string
	}{
		{"the config after the layers and before manifest.json", dockerArchive(t, [2]string{"l1/layer.tar", strings.Repeat("x", 10000)}, [2]string{"abc.json", config}, [2]string{"manifest.json", manifest}),
			[]string{"ADD http://127.0.0.1:1/x /x", "RUN id"}, ""},
		{"manifest.json first, the config last", dockerArchive(t, [2]string{"manifest.json", manifest}, [2]string{"l1/layer.tar", "x"}, [2]string{"./abc.json", config}),
			[]string{"ADD http://127.0.0.1:1/x /x", "RUN id"}, ""},
		{"an image without triggers", dockerArchive(t, [2]string{"abc.json", `{"config":{}}`}, [2]string{"manifest.json", manifest}), nil, ""},
		{"no manifest.json", dockerArchive(t, [2]string{"abc.json", config}), nil, "manifest.json"},
		{"a manifest of two images", dockerArchive(t, [2]string{"abc.json", config}, [2]string{"manifest.json", `[{"Config":"abc.json"},{"Config":"abc.json"}]`}), nil, "names 2 images, want 1"},
		{"the config missing", dockerArchive(t, [2]string{"manifest.json", manifest}), nil, "config abc.json: not in the archive"},
		{"a config that is not JSON", dockerArchive(t, [2]string{"abc.json", "{"}, [2]string{"manifest.json", manifest}), nil, "config abc.json"},
		{"not a tar", []byte("not a tar archive"), nil, "read the archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := archiveTriggers(bytes.NewReader(tc.archive))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("archiveTriggers = %q, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("archiveTriggers = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzArchiveTriggers(f *testing.F) {
	f.Add(dockerArchive(f, [2]string{"abc.json", `{"config":{"OnBuild":["RUN id"]}}`}, [2]string{"manifest.json", `[{"Config":"abc.json"}]`}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, archive []byte) {
		triggers, err := archiveTriggers(bytes.NewReader(archive))
		if err != nil && triggers != nil {
			t.Fatalf("an error (%v) with triggers %q", err, triggers)
		}
	})
}

func TestImageNamesAreComparedAsDockerShowsThem(t *testing.T) {
	for _, tc := range []struct {
		name   string
		podman bool
		want   string
	}{
		{"docker.io/library/alpine:3", true, "alpine:3"},
		{"docker.io/hostlet-build/x-app:new", true, "hostlet-build/x-app:new"},
		{"localhost/hostlet-test-demo:1", true, "hostlet-test-demo:1"},
		{"localhost/hostlet-test-demo:1", false, "localhost/hostlet-test-demo:1"},
		{"localhost:5000/a:1", true, "localhost:5000/a:1"},
		{"127.0.0.1:5000/a/b:1", true, "127.0.0.1:5000/a/b:1"},
		{"alpine:3", false, "alpine:3"},
		{"docker.io/library/alpine:3", false, "docker.io/library/alpine:3"},
		{"<none>:<none>", true, "<none>:<none>"},
	} {
		if got := familiarImage(tc.name, tc.podman); got != tc.want {
			t.Errorf("familiarImage(%q, podman %v) = %q, want %q", tc.name, tc.podman, got, tc.want)
		}
	}
}

func TestCgroupPathIsTheMemoryControllersOrTheUnifiedOne(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"cgroup v2", "0::/system.slice/docker-abc.scope\n", "/system.slice/docker-abc.scope", true},
		{"cgroup v1 with the memory controller", "12:pids:/docker/abc\n5:memory:/docker/abc\n1:name=systemd:/docker/abc\n", "/docker/abc", true},
		{"hybrid: v1 memory wins over the unified line", "0::/init.scope\n7:memory:/libpod_parent/libpod-abc\n", "/libpod_parent/libpod-abc", true},
		{"joined controllers", "4:cpu,cpuacct:/x\n9:memory,hugetlb:/hostlet-engine/abc\n", "/hostlet-engine/abc", true},
		{"no usable line", "garbage\n3:memory:relative\n", "", false},
		{"empty", "", "", false},
	} {
		got, ok := cgroupPathOf(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: cgroupPathOf = %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzCgroupPathOf(f *testing.F) {
	f.Add("0::/system.slice/docker-abc.scope\n")
	f.Add("5:memory:/docker/abc\n")
	f.Fuzz(func(t *testing.T, in string) {
		if p, ok := cgroupPathOf(in); ok && !strings.HasPrefix(p, "/") {
			t.Fatalf("cgroupPathOf(%q) = %q, not absolute", in, p)
		}
	})
}

func TestIgnoredSettingNamesWhatTheEngineDropped(t *testing.T) {
	nofile := []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}}
	zeroR := []container.DeviceMapping{{PathOnHost: "/dev/zero", PathInContainer: "/dev/z", CgroupPermissions: "r"}}
	host := func(ulimits []*container.Ulimit, devices []container.DeviceMapping, sysctls map[string]string) *container.HostConfig {
		return &container.HostConfig{Resources: container.Resources{Ulimits: ulimits, Devices: devices}, Sysctls: sysctls}
	}
	want := host(nofile, zeroR, map[string]string{"net.core.somaxconn": "512", "kernel.msgmax": "65536"})
	for _, tc := range []struct {
		name string
		got  *container.HostConfig
		want string
	}{
		{"all applied", host(nofile, zeroR, want.Sysctls), ""},
		{"sysctls not reported (Podman: applied, never shown)", host(nofile, zeroR, nil), ""},
		{"a soft limit changed", host([]*container.Ulimit{{Name: "nofile", Soft: 2048, Hard: 2048}}, zeroR, nil), "ulimits[nofile]: asked 1024:2048, got 2048:2048"},
		{"a ulimit dropped", host(nil, zeroR, nil), "ulimits[nofile]: asked 1024:2048, got none"},
		{"the kernel's names, and an engine's default beside", host([]*container.Ulimit{{Name: "RLIMIT_NPROC", Soft: 9, Hard: 9}, {Name: "RLIMIT_NOFILE", Soft: 1024, Hard: 2048}}, zeroR, nil), ""},
		{"a device's permissions dropped", host(nofile, []container.DeviceMapping{{PathOnHost: "/dev/zero", PathInContainer: "/dev/z"}}, nil),
			"devices[/dev/zero:/dev/z]: asked permissions r, got none reported (the engine gives rwm)"},
		{"a device missing", host(nofile, nil, nil), "devices[/dev/zero:/dev/z]: asked permissions r, got no such device"},
	} {
		if got := ignoredSetting(want, tc.got); got != tc.want {
			t.Errorf("%s: ignoredSetting = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := ignoredSetting(host(nil, []container.DeviceMapping{{PathOnHost: "/dev/zero", PathInContainer: "/dev/z", CgroupPermissions: "rwm"}}, nil), host(nil, nil, nil)); got != "" {
		t.Errorf("a device asked rwm (what Podman gives): ignoredSetting = %q, want none", got)
	}
}

func TestJoinedContainersHaveNoAddressOfTheirOwn(t *testing.T) {
	c := func(pod, slot, ip string) Container {
		return Container{IP: ip, Labels: map[string]string{LabelPod: pod, LabelContainer: slot}}
	}
	listed := []Container{c("web", InfraName, "10.88.0.7"), c("web", "a", "10.88.0.7"), c("web", "b", "10.88.0.7"), c("db", "app", "10.88.0.9"), c("api", "app", "10.88.0.7")}
	clearJoinedIPs(listed)
	for i, want := range []string{"10.88.0.7", "", "", "10.88.0.9", "10.88.0.7"} {
		if listed[i].IP != want {
			t.Errorf("%s/%s: IP %q, want %q", listed[i].Pod(), listed[i].Slot(), listed[i].IP, want)
		}
	}
}
