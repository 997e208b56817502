package agent

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
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
// so a new hostlet with a new pause image never restarts a pod. The binary
// is streamed, never held in memory: hashing it at every start costs one
// read of the file, building the image two more.
func PauseImage(ctx context.Context, rt imageLoader, binary string) (string, error) {
	ref, err := pauseRef(binary)
	if err != nil {
		return "", err
	}
	if err := rt.EnsureImage(ctx, ref, manifest.PullNever); err == nil {
		return ref, nil
	}
	f, err := imagebuild.FromDisk(binary, "/hostlet", 0o755)
	if err != nil {
		return "", fmt.Errorf("build pause image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(imagebuild.Write(pw, ref, []imagebuild.File{f}, []string{"/hostlet", "pause"}, nil))
	}()
	err = rt.LoadImage(ctx, pr)
	// Unblock the writer if the load stopped reading early.
	pr.CloseWithError(errors.New("image load ended"))
	if err != nil {
		return "", fmt.Errorf("load pause image %s: %w", ref, err)
	}
	return ref, nil
}

// pauseRef checks that binary is statically linked and returns the pause
// image's reference, tagged with the start of its SHA-256.
func pauseRef(binary string) (string, error) {
	f, err := os.Open(binary)
	if err != nil {
		return "", fmt.Errorf("read hostlet binary for the pause image: %w", err)
	}
	defer f.Close()
	if err := checkStatic(f); err != nil {
		return "", fmt.Errorf("pause image from %s: %w (build with CGO_ENABLED=0, as `make build` does, or set docker.infraImage)", binary, err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read hostlet binary %s for the pause image: %w", binary, err)
	}
	return "hostlet-pause:" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

// checkStatic refuses a dynamically linked binary: it would not run in an
// image with nothing else in it.
func checkStatic(r io.ReaderAt) error {
	f, err := elf.NewFile(r)
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
