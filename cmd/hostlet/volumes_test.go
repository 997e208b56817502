package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
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
