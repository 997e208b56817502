package sync_test

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/hostlet/hostlet/sync/podspec"
)

// fsGroupEnginePod runs the test image as user 1000 with fsGroup 2000
// and an empty dir at /data; rev tells versions apart.
const fsGroupEnginePod = `
version: v1beta1
id: grouped
terminationGracePeriodSeconds: 1
fsGroup: 2000
volumes:
  - name: data
containers:
  - name: app
    image: %s
    command: [/demo, pause]
    user: "1000"
    env: [{name: REV, value: %q}]
    volumeMounts: [{name: data, mountPath: /data}]
`

// TestFSGroupOnTheEngine: on the real engine, a pod's fsGroup is its
// container's supplementary group and its empty dir's (the volume's
// folder on the host group 2000, setgid); a link a container planted in
// the volume to a file of the host is not followed when the next
// version walks the volume again.
func TestFSGroupOnTheEngine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.set(e.pod(fsGroupEnginePod, e.img, "1"))
	e.sync()
	info := e.inspect(e.containers()["grouped/app"].ID)
	if !slices.Contains(info.HostConfig.GroupAdd, "2000") {
		t.Errorf("groupAdd %v, want 2000 in it", info.HostConfig.GroupAdd)
	}
	vol, err := e.cli.VolumeInspect(e.ctx, podspec.VolumeName(e.inst, "grouped", "data"))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(vol.Mountpoint)
	if err != nil {
		t.Fatal(err)
	}
	if gid := fi.Sys().(*syscall.Stat_t).Gid; gid != 2000 || fi.Mode()&os.ModeSetgid == 0 {
		t.Errorf("volume folder: group %d mode %v, want 2000 and setgid", gid, fi.Mode())
	}

	// What a container of the pod could do: a link to a file of the
	// host (as /etc/shadow is), and the next version walks it.
	target := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(target, []byte("root:x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(vol.Mountpoint, "shadow")); err != nil {
		t.Fatal(err)
	}
	e.set(e.pod(fsGroupEnginePod, e.img, "2"))
	e.sync()
	if ti, err := os.Stat(target); err != nil || ti.Sys().(*syscall.Stat_t).Gid != 0 || ti.Mode().Perm() != 0o600 {
		t.Errorf("the link's target outside the volume was changed: %v, %v", ti.Mode(), err)
	}
}
