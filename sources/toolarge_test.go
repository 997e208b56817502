package sources

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// A file over the size limit in a tree is manifest.ErrTooLarge to
// errors.Is, through the multierror and the *manifest.Error naming it.
func TestReadTreeTooLargeIsErrTooLarge(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "big.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(manifest.MaxSize + 1); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = ReadTree(context.Background(), dir, []string{"."}, "local", nil)
	if !errors.Is(err, manifest.ErrTooLarge) {
		t.Fatalf("ReadTree: %v; errors.Is(err, manifest.ErrTooLarge) = false", err)
	}
	var me *manifest.Error
	if !errors.As(err, &me) || me.Origin.File != "big.yaml" {
		t.Errorf("ReadTree: %v, want a *manifest.Error naming big.yaml", err)
	}
}
