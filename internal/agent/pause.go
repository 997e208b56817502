package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/hostlet/hostlet/internal/imagebuild"
	"github.com/hostlet/hostlet/manifest"
)

// imageLoader is what building the pause image needs of the runtime.
type imageLoader interface {
	EnsureImage(ctx context.Context, ref, pullPolicy string) error
	LoadImage(ctx context.Context, tar io.Reader) error
}

// PauseImage makes sure the infra image built from this hostlet binary is
// loaded and returns its reference. The tag is derived from the binary, so
// the same binary reuses its image; the image is not part of any spec hash,
// so a new hostlet with a new pause image never restarts a pod.
func PauseImage(ctx context.Context, rt imageLoader, binary string) (string, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("read hostlet binary for the pause image: %w", err)
	}
	if err := checkStatic(data); err != nil {
		return "", fmt.Errorf("pause image from %s: %w (build with CGO_ENABLED=0, as `make build` does, or set docker.infraImage)", binary, err)
	}
	sum := sha256.Sum256(data)
	ref := "hostlet-pause:" + hex.EncodeToString(sum[:])[:12]
	if err := rt.EnsureImage(ctx, ref, manifest.PullNever); err == nil {
		return ref, nil
	}
	var buf bytes.Buffer
	files := []imagebuild.File{{Path: "/hostlet", Mode: 0o755, Data: data}}
	if err := imagebuild.Write(&buf, ref, files, []string{"/hostlet", "pause"}, nil); err != nil {
		return "", fmt.Errorf("build pause image: %w", err)
	}
	if err := rt.LoadImage(ctx, &buf); err != nil {
		return "", fmt.Errorf("load pause image %s: %w", ref, err)
	}
	return ref, nil
}

// checkStatic refuses a dynamically linked binary: it would not run in an
// image with nothing else in it.
func checkStatic(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("the binary is dynamically linked")
		}
	}
	return nil
}
