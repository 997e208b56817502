package agent_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/hostlet/hostlet/internal/agent"
	"github.com/hostlet/hostlet/internal/dockertest"
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
	ref, err := agent.PauseImage(t.Context(), f, bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("/hostlet in the image: %d bytes, want the binary's %d", len(got), len(want))
	}
	// Present now: no second load, same reference.
	f.present[ref] = true
	ref2, err := agent.PauseImage(t.Context(), f, bin)
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
			_, err := agent.PauseImage(t.Context(), failing, tc.bin)
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
	ref, err := agent.PauseImage(t.Context(), rt, bin)
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
	if ref2, err := agent.PauseImage(t.Context(), rt, bin); err != nil || ref2 != ref {
		t.Errorf("second call: %q, %v; want %q", ref2, err, ref)
	}
}
