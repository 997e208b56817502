package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/datafolder"
)

// TestVolumesCommand: `hostlet volumes` lists the instance's volumes with
// their kind; `hostlet volumes rm` removes an unused one and leaves, with
// an error naming it, one that is not the instance's.
func TestVolumesCommand(t *testing.T) {
	instance := dockertest.Instance(t)
	d := dockertest.DockerFor(t, instance)
	name := instance + "_data"
	if err := d.EnsureVolume(t.Context(), name, map[string]string{hruntime.LabelPersistent: "true"}); err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, t.TempDir(), "hostlet.yaml", fmt.Sprintf("hostname: vols\ninstance: %s\n", instance))

	r := runCLI(t, "volumes", "--config", cfg, "-o", "json")
	var vols []hruntime.VolumeInfo
	if err := json.Unmarshal([]byte(r.stdout), &vols); err != nil || r.code != 0 {
		t.Fatalf("volumes -o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(vols) != 1 || vols[0].Name != name || !vols[0].Persistent || len(vols[0].UsedBy) != 0 {
		t.Fatalf("volumes %+v, want %s, persistent, unused", vols, name)
	}
	if r := runCLI(t, "volumes", "--config", cfg); r.code != 0 || !strings.Contains(r.stdout, name+"  persistent") {
		t.Errorf("volumes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, "volumes", "rm", "--config", cfg, name, "not-"+name)
	if r.code != 1 || !strings.Contains(r.stdout, "removed "+name) || !strings.Contains(r.stderr, `volume "not-`+name+`"`) {
		t.Errorf("volumes rm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := d.CheckVolume(t.Context(), name); !hruntime.IsNotFound(err) {
		t.Errorf("%s still there after rm: %v", name, err)
	}
}

// TestVolumesListsAndRemovesDataFolders: `hostlet volumes` lists the
// instance's data folders (<project>/<folder>) with their size and the
// containers that mount anything in them; `hostlet volumes rm` leaves one
// in use, naming the container, and removes it once unused.
func TestVolumesListsAndRemovesDataFolders(t *testing.T) {
	instance := dockertest.Instance(t)
	dataDir := t.TempDir()
	p, err := datafolder.New(dataDir, instance).Ensure("shop/data/db")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "PG_VERSION", "16\n")
	cli := dockertest.Client(t)
	name := "hostlet-test-user-" + instance
	created, err := cli.ContainerCreate(t.Context(), &container.Config{Image: dockertest.TestImage(t), Cmd: []string{"/demo", "pause"}},
		&container.HostConfig{Binds: []string{p + ":/var/lib/postgresql/data"}}, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	removeUser := func() {
		_ = cli.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	}
	t.Cleanup(removeUser)
	cfg := writeFile(t, t.TempDir(), "hostlet.yaml", fmt.Sprintf("hostname: vols\ninstance: %s\nstateDir: %s\ncompose:\n  dataDir: %s\n", instance, t.TempDir(), dataDir))

	r := runCLI(t, "volumes", "--config", cfg, "-o", "json")
	var vols []hruntime.VolumeInfo
	if err := json.Unmarshal([]byte(r.stdout), &vols); err != nil || r.code != 0 {
		t.Fatalf("volumes -o json: exit %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	folder := filepath.Join(dataDir, instance, "shop", "data")
	if len(vols) != 1 || vols[0].Name != "shop/data" || vols[0].Path != folder || vols[0].SizeBytes != 3 ||
		len(vols[0].UsedBy) != 1 || vols[0].UsedBy[0] != name {
		t.Fatalf("volumes %+v, want shop/data at %s, 3 bytes, used by %s", vols, folder, name)
	}
	if r := runCLI(t, "volumes", "--config", cfg); r.code != 0 || !strings.Contains(r.stdout, "shop/data  data folder  3B") {
		t.Errorf("volumes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, "volumes", "rm", "--config", cfg, "shop/data"); r.code != 1 || !strings.Contains(r.stderr, `data folder "shop/data" is used by `+name) {
		t.Errorf("volumes rm of a folder in use: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	removeUser()
	if r := runCLI(t, "volumes", "rm", "--config", cfg, "shop/data"); r.code != 0 || !strings.Contains(r.stdout, "removed shop/data") {
		t.Errorf("volumes rm: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(folder); !os.IsNotExist(err) {
		t.Errorf("%s after rm: %v", folder, err)
	}
}
