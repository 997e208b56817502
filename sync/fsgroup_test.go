package sync_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/internal/filestore"
	"github.com/hostlet/hostlet/manifest"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/podspec"
	"github.com/hostlet/hostlet/sync/synctest"
)

// fsGroupPod is a pod whose container app mounts an empty dir, a named
// Docker volume, a data folder and a 0400 secret file, with fields (an
// fsGroup, or none) at the pod's level.
func fsGroupPod(t *testing.T, fields string) hsync.Pod {
	return decodePod(t, `
version: v1beta1
id: web
`+fields+`
volumes:
  - name: scratch
  - name: db
    dockerVolume: shop_db
  - name: data
    dataFolder: shop/data
  - name: token
    files: {source: secret token, items: [{path: token, data: `+base64.StdEncoding.EncodeToString([]byte("s3cret"))+`, mode: 0o400}]}
containers:
  - name: app
    image: example.org/app:1
    volumeMounts:
      - {name: scratch, mountPath: /scratch}
      - {name: db, mountPath: /db}
      - {name: data, mountPath: /data}
      - {name: token, mountPath: /run/token, readOnly: true}
`)
}

// fsGroupSyncer is a syncer on fake whose Docker volumes are folders of
// a temporary folder (returned by name), walking at most maxEntries.
func fsGroupSyncer(t *testing.T, fake *synctest.Fake, maxEntries int) (*hsync.Syncer, map[string]string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("changing a folder's group to any group needs root")
	}
	dir := t.TempDir()
	vols := map[string]string{}
	for _, name := range []string{"shop_db", podspec.VolumeName("unit", "web", "scratch")} {
		vols[name] = filepath.Join(dir, "volumes", name)
		if err := os.MkdirAll(vols[name], 0o755); err != nil {
			t.Fatal(err)
		}
		fake.SetVolumeHostPath(name, vols[name])
	}
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second,
		Concurrency: 4, Prune: true, StateDir: dir, Files: filestore.New(filepath.Join(dir, "files")),
		DataDir: filepath.Join(dir, "data"), FSGroupMaxEntries: maxEntries,
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	return s, vols
}

// groupOf is a path's group and mode.
func groupOf(t *testing.T, p string) (uint32, os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Gid, fi.Mode()
}

// TestFSGroupGivesThePodsVolumesToTheGroup: a pod's fsGroup is a
// supplementary group of its container, and its empty dir, named
// Docker volume and data folder are group-owned by it, group writable
// and setgid, before the container is created; its secret file is
// group-owned and group readable (0440), in a copy of its own.
func TestFSGroupGivesThePodsVolumesToTheGroup(t *testing.T) {
	fake := synctest.NewFake()
	s, vols := fsGroupSyncer(t, fake, 0)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{fsGroupPod(t, "fsGroup: 2000")}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	spec := specsOf(t, fake, "web")["app"]
	if !slices.Contains(spec.GroupAdd, "2000") {
		t.Errorf("groupAdd %v, want 2000 in it", spec.GroupAdd)
	}
	folders := map[string]string{"scratch": vols[podspec.VolumeName("unit", "web", "scratch")], "db": vols["shop_db"], "data": spec.Mounts[2].Source}
	for name, p := range folders {
		if gid, mode := groupOf(t, p); gid != 2000 || mode&os.ModeSetgid == 0 || mode&0o070 != 0o070 {
			t.Errorf("volume %s (%s): group %d mode %v, want 2000, g+rwx and setgid", name, p, gid, mode)
		}
	}
	token := filepath.Join(spec.Mounts[3].Source, "token")
	if gid, mode := groupOf(t, token); gid != 2000 || mode.Perm() != 0o440 {
		t.Errorf("secret file: group %d mode %v, want 2000 and 0440", gid, mode)
	}
	// The same content without the group is another copy, its own
	// mode kept.
	other := fsGroupPod(t, "")
	other.Manifest.ID = "other"
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{fsGroupPod(t, "fsGroup: 2000"), other}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	plain := specsOf(t, fake, "other")["app"]
	if plain.Mounts[3].Source == spec.Mounts[3].Source {
		t.Fatalf("pods with and without fsGroup share the copy %s", plain.Mounts[3].Source)
	}
	if gid, mode := groupOf(t, filepath.Join(plain.Mounts[3].Source, "token")); gid == 2000 || mode.Perm() != 0o400 {
		t.Errorf("copy without fsGroup: group %d mode %v, want its own 0400", gid, mode)
	}
}

// TestFSGroupInitContainersGetTheGroup: init containers are in the
// group too, as every container of a Kubernetes pod is; a container
// listing the group already does not get it twice.
func TestFSGroupInitContainersGetTheGroup(t *testing.T) {
	p := decodePod(t, `
version: v1beta1
id: web
fsGroup: 2000
initContainers:
  - {name: prep, image: example.org/app:1}
containers:
  - {name: app, image: example.org/app:1, groupAdd: ["2000", video]}
`)
	if got := podspec.Init("unit", p, 0, "infra", "gen", nil).GroupAdd; !slices.Equal(got, []string{"2000"}) {
		t.Errorf("init container's groupAdd %v, want [2000]", got)
	}
	if got := podspec.App("unit", p, 0, "infra", nil).GroupAdd; !slices.Equal(got, []string{"2000", "video"}) {
		t.Errorf("app container's groupAdd %v, want [2000 video]", got)
	}
}

// TestFSGroupFailureKeepsTheRunningVersion: a change to fsGroup whose
// volumes cannot be given to the group fails the pod with
// VolumeOwnershipNotChanged, naming the volume and the field, and
// stops nothing: a rootless engine, a volume whose files are not on
// this host, a volume with more entries than the walk may count.
func TestFSGroupFailureKeepsTheRunningVersion(t *testing.T) {
	tests := []struct {
		name  string
		setup func(fake *synctest.Fake, vols map[string]string)
		max   int
		want  string
	}{
		{name: "a rootless engine", setup: func(fake *synctest.Fake, _ map[string]string) {
			fake.SetSameHostIDs(errors.New("the engine is rootless"))
		}, want: "fsGroup 2000: the engine is rootless"},
		{name: "a volume of another driver", setup: func(fake *synctest.Fake, _ map[string]string) {
			fake.SetVolumeHostPath("shop_db", "")
		}, want: `volume db: fsGroup 2000: volume "shop_db": driver fake keeps its files out of hostlet's reach`},
		{name: "a huge volume", setup: func(_ *synctest.Fake, vols map[string]string) {
			for i := range 30 {
				if err := os.WriteFile(filepath.Join(vols["shop_db"], strings.Repeat("f", i+1)), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
		}, max: 20, want: "volume db: fsGroup 2000: too many files and folders to change: more than 20 entries in the pod's volumes together: change their group by hand"},
		{name: "volumes over the bound together", setup: func(_ *synctest.Fake, vols map[string]string) {
			for _, v := range []string{"shop_db", podspec.VolumeName("unit", "web", "scratch")} {
				for i := range 12 {
					if err := os.WriteFile(filepath.Join(vols[v], strings.Repeat("f", i+1)), nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
		}, max: 20, want: "too many files and folders to change: more than 20 entries in the pod's volumes together"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := synctest.NewFake()
			s, vols := fsGroupSyncer(t, fake, tt.max)
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{fsGroupPod(t, "")}, Ready: true})
			if err := s.SyncOnce(t.Context()); err != nil {
				t.Fatal(err)
			}
			before := idsOf(t, fake, "web")
			tt.setup(fake, vols)
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{fsGroupPod(t, "fsGroup: 2000")}, Ready: true})
			err := s.SyncOnce(t.Context())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("sync: %v, want an error saying %q", err, tt.want)
			}
			if now := idsOf(t, fake, "web"); !maps.Equal(now, before) {
				t.Errorf("containers changed: %v -> %v", before, now)
			}
			for _, c := range specsOf(t, fake, "web") {
				if slices.Contains(c.GroupAdd, "2000") {
					t.Errorf("a container of the new version was made")
				}
			}
			for _, p := range s.Report().Pods {
				if p.ID == "web" && p.Reason != hsync.ReasonFSGroup {
					t.Errorf("pod reason %q, want %s", p.Reason, hsync.ReasonFSGroup)
				}
			}
		})
	}
}

// A volume mounted under several names of one pod is walked once: the
// pod's bound on entries counts it once.
func TestFSGroupWalksAVolumeNamedTwiceOnce(t *testing.T) {
	fake := synctest.NewFake()
	s, vols := fsGroupSyncer(t, fake, 20)
	for i := range 15 {
		if err := os.WriteFile(filepath.Join(vols["shop_db"], strings.Repeat("f", i+1)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var vs, ms strings.Builder
	for i := range 40 {
		fmt.Fprintf(&vs, "  - {name: v%d, dockerVolume: shop_db}\n", i)
		fmt.Fprintf(&ms, "      - {name: v%d, mountPath: /m%d, readOnly: true}\n", i, i)
	}
	pod := decodePod(t, "version: v1beta1\nid: web\nfsGroup: 2000\nvolumes:\n"+vs.String()+"containers:\n  - name: app\n    image: example.org/app:1\n    volumeMounts:\n"+ms.String())
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatalf("40 names of a volume of 16 entries, a bound of 20: %v", err)
	}
	if gid, _ := groupOf(t, vols["shop_db"]); gid != 2000 {
		t.Errorf("the volume's group is %d, want 2000", gid)
	}
}

// The passes that only take a pod's init containers further walk its
// volumes no more: one walk for the version, the next version walks
// again.
func TestFSGroupWalksOnceWhileInitContainersRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing a folder's group to any group needs root")
	}
	fake, inits := synctest.NewFake(), &hsync.InitRuns{}
	m := initPod("web")
	gid := int64(2000)
	m.FSGroup = &gid
	m.Volumes = []manifest.Volume{{Name: "db", DockerVolume: "shop_db"}}
	m.Containers[0].VolumeMounts = []manifest.VolumeMount{{Name: "db", MountPath: "/db"}}
	fake.SetVolumeHostPath("shop_db", t.TempDir())
	walks := func() int {
		n := 0
		for _, c := range fake.Calls() {
			if c.Method == "VolumeHostPath" {
				n++
			}
		}
		return n
	}
	for i, before := range []func(){nil, func() { exitSlot(t, fake, "init.first", 0) }, func() { exitSlot(t, fake, "init.second", 0) }} {
		if before != nil {
			before()
		}
		if r := initStep(t, fake, inits, m); r.Err != nil {
			t.Fatalf("pass %d: %v", i+1, r.Err)
		}
	}
	if got := slotsOf(t, fake); !slices.Contains(got, "app running") {
		t.Fatalf("containers %v, want the app running", got)
	}
	if n := walks(); n != 1 {
		t.Errorf("%d walks over three passes of one version, want 1", n)
	}
	changed := edit(m, func(m *manifest.Manifest) { m.InitContainers[0].Command = []string{"first", "again"} })
	if r := initStep(t, fake, inits, changed); r.Err != nil {
		t.Fatal(r.Err)
	}
	if n := walks(); n != 2 {
		t.Errorf("%d walks after a new version started, want 2", n)
	}
}

// A volume mounted read-only under one name and writable under another
// gets the writable mount's group write, whichever name comes first.
func TestFSGroupVolumeNamedTwiceGetsTheWritableMountsBits(t *testing.T) {
	fake := synctest.NewFake()
	s, vols := fsGroupSyncer(t, fake, 0)
	file := filepath.Join(vols["shop_db"], "table")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	pod := decodePod(t, `
version: v1beta1
id: web
fsGroup: 2000
volumes:
  - {name: ro, dockerVolume: shop_db}
  - {name: rw, dockerVolume: shop_db}
containers:
  - name: app
    image: example.org/app:1
    volumeMounts:
      - {name: ro, mountPath: /ro, readOnly: true}
      - {name: rw, mountPath: /rw}
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if gid, mode := groupOf(t, file); gid != 2000 || mode.Perm()&0o060 != 0o060 {
		t.Errorf("file of the volume: group %d mode %v, want 2000 with group read and write", gid, mode)
	}
}
