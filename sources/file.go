package sources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// debounce collects a burst of file events (an editor's write-rename-chmod)
// into one read.
const debounce = 100 * time.Millisecond

// File reads a file or a folder tree: at start, on every change fsnotify
// reports, and every interval as a backstop. It sends an update only when
// the content changed (or the error did).
type File struct {
	cfg config.Source
	log *slog.Logger
	// typ is the source's type; paths are read relative to base ("": as
	// given).
	typ   string
	base  string
	paths []string
	clock clock.Clock
	// compose renders the Compose projects the source holds.
	compose *project.Renderer
}

// NewFile returns the file source for cfg.
func NewFile(cfg config.Source, log *slog.Logger) *File {
	return &File{cfg: cfg, log: log.With("source", cfg.Name), typ: config.TypeFile, paths: cfg.AllPaths(), clock: clock.Real{}}
}

// NewFolder returns a source of cfg's type that reads paths inside the
// local folder dir instead of its configured location (`--source
// NAME=DIR`); files are named relative to dir.
func NewFolder(cfg config.Source, dir string, paths []string, log *slog.Logger) *File {
	return &File{cfg: cfg, log: log.With("source", cfg.Name), typ: cfg.Type, base: dir, paths: paths, clock: clock.Real{}}
}

// WithClock makes the source poll and debounce on c (nil: clock.Real)
// and returns it; call it before Run.
func (f *File) WithClock(c clock.Clock) *File {
	f.clock = clock.Or(c)
	return f
}

// WithCompose sets the renderer of the Compose projects the source holds
// (nil: a project is an error) and returns it; call it before Run.
func (f *File) WithCompose(r *project.Renderer) *File {
	f.compose = r
	return f
}

// Name implements Source.
func (f *File) Name() string { return f.cfg.Name }

// Type implements Source.
func (f *File) Type() string { return f.typ }

// Read implements Source: the tree once, for `hostlet validate` and
// `hostlet diff`. Decode errors come back alongside the manifests that did
// decode.
func (f *File) Read(ctx context.Context) (manifest.Snapshot, error) {
	snap, err := ReadTree(ctx, f.base, f.paths, f.cfg.Name, f.compose)
	snap.Type = f.typ
	if cerr := ctx.Err(); cerr != nil {
		return snap, cerr
	}
	return snap, err
}

// Run implements Source.
func (f *File) Run(ctx context.Context, out chan<- Update) {
	w, events, errs := f.watcher()
	if w != nil {
		defer w.Close()
	}
	tick := f.clock.NewTicker(f.cfg.Interval)
	defer tick.Stop()
	var (
		debounceT clock.Timer
		fire      <-chan time.Time
		r         = fileReader{f: f, w: w, out: out, first: true}
	)
	if !r.read(ctx) {
		return
	}
	for {
		select {
		case <-ctx.Done():
			if debounceT != nil {
				debounceT.Stop()
			}
			return
		case <-tick.C():
			if !r.read(ctx) {
				return
			}
		case e := <-events:
			f.log.Debug("file event", "path", e.Name, "op", e.Op.String())
			if debounceT == nil {
				debounceT = f.clock.NewTimer(debounce)
			} else {
				debounceT.Reset(debounce)
			}
			fire = debounceT.C()
		case <-fire:
			fire = nil
			if !r.read(ctx) {
				return
			}
		case err := <-errs:
			f.log.Warn("fsnotify error", "error", err)
		}
	}
}

// watcher is the source's fsnotify watcher and its channels; without
// fsnotify, it is nil and so are the channels (the source polls only).
func (f *File) watcher() (*fsnotify.Watcher, <-chan fsnotify.Event, <-chan error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		f.log.Warn("fsnotify unavailable; polling only", "error", err)
		return nil, nil, nil
	}
	return w, w.Events, w.Errors
}

// fileReader is one Run's reads: what the last one sent.
type fileReader struct {
	f   *File
	w   *fsnotify.Watcher // nil: polling only
	out chan<- Update
	// lastRev is the revision last sent ("" after an error); first is
	// true until the first read is sent.
	lastRev string
	first   bool
}

// read watches the source's folders again, reads the tree and sends the
// update unless it holds the revision sent last. It returns false when ctx
// ended before the update was taken.
func (r *fileReader) read(ctx context.Context) bool {
	f := r.f
	if r.w != nil {
		f.watch(r.w)
	}
	start := f.clock.Now()
	res, err := ReadTree(ctx, f.base, f.paths, f.cfg.Name, f.compose)
	took := f.clock.Since(start)
	u := Update{Source: f.cfg.Name, Revision: res.Revision, Files: res.Files, Manifests: res.Manifests, Took: took}
	if err != nil {
		// Every failed read is sent (hostlet_source_errors_total
		// counts failures); the merge takes a repeated error as one.
		u = Update{Source: f.cfg.Name, Err: err, Took: took}
		r.lastRev = ""
	} else {
		if res.Revision == r.lastRev && !r.first {
			return true
		}
		r.lastRev = res.Revision
	}
	r.first = false
	return send(ctx, r.out, u)
}

// watch adds every folder of the source (and the parent of a file path, so
// that a file replaced by rename is seen) to the watcher. Adding a watched
// folder again is cheap; new subfolders are picked up on the read after
// their creation event.
func (f *File) watch(w *fsnotify.Watcher) {
	for _, p := range f.paths {
		if f.base != "" && !filepath.IsAbs(p) {
			p = filepath.Join(f.base, p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			// Watch the closest existing parent so the path's creation is
			// seen: at most one step per element of the path.
			dir := filepath.Dir(p)
			for range strings.Count(p, string(filepath.Separator)) + 1 {
				if _, err := os.Stat(dir); err == nil {
					_ = w.Add(dir)
					break
				}
				if dir == filepath.Dir(dir) {
					break
				}
				dir = filepath.Dir(dir)
			}
			continue
		}
		if !fi.IsDir() {
			_ = w.Add(filepath.Dir(p))
			continue
		}
		root, err := walkRoot(p)
		if err != nil {
			continue
		}
		if root != p {
			// A symlinked folder: see the link re-pointed, too.
			_ = w.Add(filepath.Dir(p))
		}
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if path != root && len(d.Name()) > 0 && d.Name()[0] == '.' {
					return filepath.SkipDir
				}
				if err := w.Add(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					f.log.Debug("watch folder", "path", path, "error", err)
				}
			}
			return nil
		})
	}
}

// walkRoot returns the folder to walk for path p: p itself, or its target
// when p is a symlink (filepath.WalkDir does not follow a symlinked root).
func walkRoot(p string) (string, error) {
	lfi, err := os.Lstat(p)
	if err != nil || lfi.Mode()&fs.ModeSymlink == 0 {
		return p, nil
	}
	root, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", "resolve symlink", unwrapPath(err))
	}
	return root, nil
}
