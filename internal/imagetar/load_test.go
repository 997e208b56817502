package imagetar_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/hostlet/hostlet/internal/imagetar"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

func TestMain(m *testing.M) { dockertest.Main(m) }

// TestLoadAndRun loads an image written by Write into the real engine and
// runs it.
func TestLoadAndRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	bin, err := os.ReadFile(dockertest.DemoBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	d := dockertest.Docker(t)
	cli := dockertest.Client(t)

	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	ref := "hostlet-test-imagebuild:" + hex.EncodeToString(suffix)
	var archive bytes.Buffer
	err = imagetar.Write(&archive, ref, []imagetar.File{
		{Path: "/demo", Mode: 0o755, Data: bin},
		{Path: "/etc/greeting", Data: []byte("hello file")},
	}, []string{"/demo"}, []string{"GREETING=hello env"})
	if err != nil {
		t.Fatal(err)
	}
	size := archive.Len()
	start := time.Now()
	if err := d.LoadImage(ctx, &archive); err != nil {
		t.Fatalf("LoadImage: %v", err)
	}
	t.Logf("loaded %s (%d KiB) in %s", ref, size>>10, time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove %s: %v", ref, err)
		}
	})

	ins, err := cli.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Architecture != goruntime.GOARCH || ins.Os != "linux" || !slices.Equal(ins.Config.Entrypoint, []string{"/demo"}) {
		t.Errorf("image = %s/%s entrypoint %q", ins.Os, ins.Architecture, ins.Config.Entrypoint)
	}

	port := testkit.FreePort(t)
	id, err := d.Create(ctx, hruntime.ContainerSpec{
		Name:   "hostlet_" + d.Instance() + "_imagebuild",
		Image:  ref,
		Labels: map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: d.Instance()},
		Ports:  []hruntime.Port{{ContainerPort: 8080, HostPort: port, HostIP: "127.0.0.1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, id); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(method, path, body, want string) {
		t.Helper()
		testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
			code, got, err := testkit.HTTP(method, base+path, body)
			if err != nil {
				return false, err.Error()
			}
			return code == 200 && got == want, fmt.Sprintf("%s %s: %d %q, want %q", method, path, code, got, want)
		})
	}
	get("GET", "/read?path=/etc/greeting", "", "hello file")
	get("GET", "/env?name=GREETING", "", "hello env")
	get("POST", "/write?path=/tmp/x", "scratch", "wrote 7 bytes\n")
	get("GET", "/read?path=/tmp/x", "", "scratch")
	if err := d.Remove(ctx, id); err != nil {
		t.Fatal(err)
	}
}
