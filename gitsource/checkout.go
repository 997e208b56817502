package gitsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
)

// CheckoutError is a checkout, or a revision of it, that cannot be read
// at all (as opposed to a manifest of it that does not decode): nothing of
// the source was read.
type CheckoutError struct{ err error }

func (e *CheckoutError) Error() string { return e.err.Error() }
func (e *CheckoutError) Unwrap() error { return e.err }

// ReadAt reads the source's paths from commit rev of the checkout dir, for
// `hostlet diff --against ref:REV`. dir may be a folder inside the
// checkout: the paths are relative to it. When a path does not exist at
// rev (the folder of a host this change adds), the source reads as empty
// there: a host cannot read it at rev, so a new host ran nothing of it.
//
// A *CheckoutError means dir is no checkout or rev no revision of it; any
// other error is the source's (a manifest that does not decode), returned
// with everything that did decode.
func ReadAt(ctx context.Context, dir, rev string, s config.Source, r *project.Renderer) (manifest.Snapshot, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return manifest.Snapshot{}, &CheckoutError{fmt.Errorf("--source %s=%s: not a git checkout, and --against ref: needs one", s.Name, dir)}
	}
	if err != nil {
		return manifest.Snapshot{}, &CheckoutError{fmt.Errorf("--source %s=%s: %w", s.Name, dir, err)}
	}
	hash, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return manifest.Snapshot{}, &CheckoutError{fmt.Errorf("--against ref:%s: not a revision of %s: %w", rev, dir, err)}
	}
	commit, err := repo.CommitObject(*hash)
	if err != nil {
		return manifest.Snapshot{}, &CheckoutError{fmt.Errorf("--against ref:%s: %w", rev, err)}
	}
	tree, err := commit.Tree()
	if err != nil {
		return manifest.Snapshot{}, &CheckoutError{fmt.Errorf("--against ref:%s: %w", rev, err)}
	}
	paths := append([]string(nil), s.AllPaths()...)
	if len(paths) == 0 {
		paths = []string{"."}
	}
	sub, err := checkoutSubdir(dir)
	if err != nil {
		sub = "" // a bare repository: paths are from its root
	}
	snap := manifest.Snapshot{Name: s.Name, Type: s.Type, Revision: hash.String()}
	for i, p := range paths {
		paths[i] = path.Join(filepath.ToSlash(sub), filepath.ToSlash(p))
		if paths[i] == "." {
			continue
		}
		if _, err := tree.FindEntry(paths[i]); err != nil {
			// At rev the host could not read this source (a path is
			// missing): a host added by this change ran nothing of it.
			return snap, nil
		}
	}
	snap.Manifests, snap.Files, err = ReadCommit(ctx, commit, paths, s.Name, r)
	return snap, err
}

// checkoutSubdir returns dir's path relative to the root of its checkout.
func checkoutSubdir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return filepath.Rel(d, abs)
		}
		if d == filepath.Dir(d) {
			return "", errors.New("not in a checkout")
		}
	}
}

// CheckoutHead returns the commit checked out in dir (or a folder above
// it), or "" when dir is not in a git checkout.
func CheckoutHead(dir string) string {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return ""
	}
	head, err := repo.Head()
	if err != nil {
		return ""
	}
	return head.Hash().String()
}

// Checkout is a git source read from a local checkout instead of its URL
// (`--source NAME=DIR`): its paths inside dir as they are (uncommitted
// edits included), named by the commit checked out there when dir is in a
// checkout. It also reads other revisions of that checkout (ReadAt).
type Checkout struct {
	*sources.File
	cfg     config.Source
	dir     string
	compose *project.Renderer
}

// NewCheckout returns the git source cfg read from the checkout dir.
func NewCheckout(cfg config.Source, dir string, log *slog.Logger) *Checkout {
	paths := cfg.AllPaths()
	if len(paths) == 0 {
		paths = []string{"."}
	}
	return &Checkout{File: sources.NewFolder(cfg, dir, paths, log), cfg: cfg, dir: dir}
}

// Read implements sources.Source.
func (c *Checkout) Read(ctx context.Context) (manifest.Snapshot, error) {
	snap, err := c.File.Read(ctx)
	if head := CheckoutHead(c.dir); head != "" {
		snap.Revision = head
	}
	return snap, err
}

// WithCompose sets the renderer of the Compose projects the source holds,
// in the checkout and at other revisions, and returns it.
func (c *Checkout) WithCompose(r *project.Renderer) *Checkout {
	c.compose = r
	c.File.WithCompose(r)
	return c
}

// ReadAt reads the source at revision rev of the checkout (see ReadAt).
func (c *Checkout) ReadAt(ctx context.Context, rev string) (manifest.Snapshot, error) {
	return ReadAt(ctx, c.dir, rev, c.cfg, c.compose)
}
