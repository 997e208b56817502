package agent

import (
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/imagetar"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// imageLoader is what building the pause image needs of the runtime.
type imageLoader interface {
	EnsureImage(ctx context.Context, ref, pullPolicy string) error
	LoadImage(ctx context.Context, tar io.Reader) error
}

// PauseImage makes sure the infra image built from this hostlet binary is
// loaded for instance and returns its reference. The tag is derived from
// the binary and the instance (hostlet-pause:<binary>-<instance>, both
// hashed), so the same binary reuses its image, and each instance on an
// engine holds a tag of its own (the image is one: the same content):
// pruning an older tag of one instance (PrunePauseImages) never takes
// another's; the image is not part of any spec hash,
// so a new hostlet with a new pause image never restarts a pod. The binary
// is streamed, never held in memory: hashing it at every start costs one
// read of the file, building the image two more.
func PauseImage(ctx context.Context, rt imageLoader, binary, instance string) (string, error) {
	ref, err := pauseRef(binary, instance)
	if err != nil {
		return "", err
	}
	if err := rt.EnsureImage(ctx, ref, manifest.PullNever); err == nil {
		return ref, nil
	}
	f, err := imagetar.FromDisk(binary, "/hostlet", 0o755)
	if err != nil {
		return "", fmt.Errorf("build pause image %s: %w", ref, err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(imagetar.Write(pw, ref, []imagetar.File{f}, []string{"/hostlet", "pause"}, nil))
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
// image's reference for instance, tagged with the start of the binary's
// SHA-256 and of the instance's.
func pauseRef(binary, instance string) (string, error) {
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
	inst := sha256.Sum256([]byte(instance))
	return pauseRepo + hex.EncodeToString(h.Sum(nil))[:12] + "-" + hex.EncodeToString(inst[:])[:8], nil
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

// pauseImagesFile lists, under stateDir, the pause images this hostlet
// has built or used (JSON, a list of references).
const pauseImagesFile = "pause-images.json"

// pauseRepo is the repository of every pause image hostlet builds.
const pauseRepo = "hostlet-pause:"

// imageRemover is what pruning pause images needs of the runtime.
type imageRemover interface {
	RemoveImage(ctx context.Context, ref string) error
}

// PrunePauseImages removes the pause image tags of older hostlet binaries
// that this hostlet (its stateDir's list) built or used, keeping current,
// and records what is left: an image still in use (an infra container of
// a pod that has not been recreated since the upgrade: its image is not
// part of any spec hash) is refused by the engine and tried again at the
// next start. Only tags of current's instance are removed (a tag ends with
// its instance's hash; one without, from an older hostlet, may be shared
// and is left alone), so other hostlets' pause images on the engine are
// never touched. Failures are only logged.
func PrunePauseImages(ctx context.Context, rt imageRemover, stateDir, current string, log *slog.Logger) {
	path := filepath.Join(stateDir, pauseImagesFile)
	var refs []string
	if data, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(data, &refs); err != nil {
			log.Warn("pause images list unreadable; older pause images are not pruned", "file", path, "error", err)
			refs = nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		log.Warn("read pause images list", "file", path, "error", err)
	}
	keep := []string{current}
	instanceOf := func(ref string) string {
		tag := strings.TrimPrefix(ref, pauseRepo)
		if i := strings.LastIndex(tag, "-"); i >= 0 {
			return tag[i+1:]
		}
		return ""
	}
	mine := instanceOf(current)
	for _, ref := range refs {
		if ref == current || !strings.HasPrefix(ref, pauseRepo) || slices.Contains(keep, ref) || mine == "" || instanceOf(ref) != mine {
			continue
		}
		err := rt.RemoveImage(ctx, ref)
		switch {
		case err == nil, errors.Is(err, hruntime.ErrNotFound):
			log.Info("pruned the pause image of an older hostlet", "image", ref)
		case errors.Is(err, hruntime.ErrConflict):
			log.Info("pause image of an older hostlet still in use; kept until a later start", "image", ref)
			keep = append(keep, ref)
		default:
			log.Warn("prune pause image", "image", ref, "error", err)
			keep = append(keep, ref)
		}
	}
	data, err := json.Marshal(keep)
	if err == nil {
		err = atomicfile.WriteFile(path, data, 0o600)
	}
	if err != nil {
		log.Warn("write pause images list", "file", path, "error", err)
	}
}
