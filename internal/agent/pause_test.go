package agent_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"

	"github.com/hostlet/hostlet/internal/agent"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// uniqueBinary copies the static demo binary with random bytes appended
// (an ELF file may carry trailing data), so its pause image tag is this
// test's own.
func uniqueBinary(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(dockertest.DemoBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, []byte(rand.Text())...)
	p := filepath.Join(t.TempDir(), "hostlet")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeLoader has the images in present and hands each archive to load.
type fakeLoader struct {
	present map[string]bool
	loads   int
	load    func(io.Reader) error
}

func (f *fakeLoader) EnsureImage(_ context.Context, ref, _ string) error {
	if f.present[ref] {
		return nil
	}
	return errors.New("no such image")
}

func (f *fakeLoader) LoadImage(_ context.Context, r io.Reader) error {
	f.loads++
	return f.load(r)
}

func TestPauseImageArchive(t *testing.T) {
	bin := uniqueBinary(t)
	want, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	f := &fakeLoader{present: map[string]bool{}, load: func(r io.Reader) error {
		// The layer is a tar inside the archive; /hostlet is in it.
		outer := tar.NewReader(r)
		for {
			h, err := outer.Next()
			if err != nil {
				return err
			}
			if !strings.HasSuffix(h.Name, "/layer.tar") {
				continue
			}
			inner := tar.NewReader(outer)
			for {
				ih, err := inner.Next()
				if err != nil {
					return err
				}
				if ih.Name == "hostlet" {
					got, err = io.ReadAll(inner)
					return err
				}
			}
		}
	}}
	ref, err := agent.PauseImage(t.Context(), f, bin, "test")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("/hostlet in the image: %d bytes, want the binary's %d", len(got), len(want))
	}
	// Present now: no second load, same reference.
	f.present[ref] = true
	ref2, err := agent.PauseImage(t.Context(), f, bin, "test")
	if err != nil || ref2 != ref || f.loads != 1 {
		t.Errorf("second call: %q, %v, %d loads; want %q and 1 load", ref2, err, f.loads, ref)
	}
}

func TestPauseImageErrors(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	failing := &fakeLoader{load: func(r io.Reader) error {
		// The engine gives up after reading a little.
		_, _ = io.CopyN(io.Discard, r, 1000)
		return errors.New("engine: disk full")
	}}
	for _, tc := range []struct {
		name, bin string
		want      string
	}{
		{"missing binary", filepath.Join(t.TempDir(), "none"), "read hostlet binary"},
		{"not an ELF binary", notELF, "not an ELF binary"},
		{"load fails", uniqueBinary(t), "engine: disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.PauseImage(t.Context(), failing, tc.bin, "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPauseImageDocker loads the pause image into the real engine and runs
// it as an infra container would run.
func TestPauseImageDocker(t *testing.T) {
	rt := dockertest.Docker(t)
	cli := dockertest.Client(t)
	bin := uniqueBinary(t)
	ref, err := agent.PauseImage(t.Context(), rt, bin, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Errorf("remove %s: %v", ref, err)
		}
	})
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	insp, err := cli.ImageInspect(t.Context(), ref)
	if err != nil {
		t.Fatalf("inspect %s: %v", ref, err)
	}
	if insp.Size < fi.Size() || strings.Join(insp.Config.Entrypoint, " ") != "/hostlet pause" {
		t.Errorf("image %s: size %d (binary %d), entrypoint %q", ref, insp.Size, fi.Size(), insp.Config.Entrypoint)
	}
	// Again: found, same reference.
	if ref2, err := agent.PauseImage(t.Context(), rt, bin, "test"); err != nil || ref2 != ref {
		t.Errorf("second call: %q, %v; want %q", ref2, err, ref)
	}
}

// TestPrunePauseImagesDocker: at start, the pause images of older
// binaries this hostlet recorded are removed from the real engine, one a
// container still uses is kept (and stays recorded), and the current one
// is recorded; images it never recorded are not touched.
func TestPrunePauseImagesDocker(t *testing.T) {
	rt := dockertest.Docker(t)
	cli := dockertest.Client(t)
	instance := dockertest.Instance(t)
	var refs []string
	for range 4 {
		ref, err := agent.PauseImage(t.Context(), rt, uniqueBinary(t), "test")
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Errorf("remove %s: %v", ref, err)
			}
		})
	}
	old, inUse, current, other := refs[0], refs[1], refs[2], refs[3]
	if _, err := cli.ContainerCreate(t.Context(), &container.Config{Image: inUse, Labels: map[string]string{hruntime.LabelInstance: instance}}, nil, nil, nil, ""); err != nil {
		t.Fatal(err)
	}
	stateDir := t.TempDir()
	log := dockertest.Logger(t)
	agent.PrunePauseImages(t.Context(), rt, stateDir, old, log)
	agent.PrunePauseImages(t.Context(), rt, stateDir, inUse, log)
	agent.PrunePauseImages(t.Context(), rt, stateDir, current, log)
	present := func(ref string) bool {
		_, err := cli.ImageInspect(t.Context(), ref)
		return err == nil
	}
	if present(old) {
		t.Errorf("%s, an older pause image no container uses, is still there", old)
	}
	for _, ref := range []string{inUse, current, other} {
		if !present(ref) {
			t.Errorf("%s was removed", ref)
		}
	}
	data, err := os.ReadFile(filepath.Join(stateDir, "pause-images.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded []string
	if err := json.Unmarshal(data, &recorded); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recorded, []string{current, inUse}) {
		t.Errorf("recorded %q, want %q", recorded, []string{current, inUse})
	}
}

// recordingRemover removes whatever it is asked to (no container uses the
// image at that moment), recording it.
type recordingRemover struct{ removed []string }

func (r *recordingRemover) RemoveImage(_ context.Context, ref string) error {
	r.removed = append(r.removed, ref)
	return nil
}

// TestPruneKeepsPauseImageOfAnotherInstance: images of other hostlets on
// the engine are never touched, and the list of pause images says which
// images an instance used, not which it owns. Two hostlets (instances a
// and b, as the config's instance key allows) share an engine and run the
// same binary: their pause image is the SAME tag, hostlet-pause:<hash of
// the binary>, and both lists record it. When a is upgraded and prunes at
// its start, removing that tag (no infra container uses it at that moment)
// would take b's current pause image: b's next multi-container pod could
// not get its infra container (the tag gone, and a pull of
// hostlet-pause:<hash> from Docker Hub fails) until b is restarted.
func TestPruneKeepsPauseImageOfAnotherInstance(t *testing.T) {
	const old, upgraded = "hostlet-pause:0123456789ab", "hostlet-pause:ba9876543210"
	stateA, stateB := t.TempDir(), t.TempDir()
	rm := &recordingRemover{}
	log := slog.New(slog.DiscardHandler)
	// Both started on the old binary: each records the image it used.
	agent.PrunePauseImages(t.Context(), rm, stateA, old, log)
	agent.PrunePauseImages(t.Context(), rm, stateB, old, log)
	// a restarts on the new binary; b keeps running on old.
	agent.PrunePauseImages(t.Context(), rm, stateA, upgraded, log)
	if slices.Contains(rm.removed, old) {
		t.Errorf("instance a removed %s, the current pause image of instance b on the same engine (removed: %q)", old, rm.removed)
	}
}
