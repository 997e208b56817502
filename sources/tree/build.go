package tree

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// MaxBuildBytes bounds the bytes one read of a source reads for its
// builds' contexts together; a file read for several builds (pods built
// from one folder) counts once, and is held once.
const MaxBuildBytes = 2 * buildctx.MaxBytes

// contextCache is what one read of a source has read for its builds: each
// file once, by its path in the tree, its bytes shared by every build
// that has it (a Files value is immutable), within MaxBuildBytes.
type contextCache struct {
	files map[string][]byte
	bytes int
}

func newContextCache() *contextCache { return &contextCache{files: map[string][]byte{}} }

// errBuildBytes is the error of a read past MaxBuildBytes.
var errBuildBytes = fmt.Errorf("the builds of this source read more than %d bytes of context files together", MaxBuildBytes)

// read returns the file at name (its path in the tree), read with read
// the first time.
func (c *contextCache) read(name string, read func() ([]byte, error)) ([]byte, error) {
	if data, ok := c.files[name]; ok {
		return data, nil
	}
	data, err := read()
	if err != nil {
		return nil, err
	}
	if c.bytes += len(data); c.bytes > MaxBuildBytes {
		return nil, errBuildBytes
	}
	c.files[name] = data
	return data, nil
}

// hasBuild reports whether a container of ms is built.
func hasBuild(ms []manifest.Sourced) bool {
	for _, s := range ms {
		for _, c := range s.Manifest.Containers {
			if c.Build != nil {
				return true
			}
		}
	}
	return false
}

// resolveBuilds reads the builds of the manifests ms of file e of root:
// a build's context is a folder of root's builds tree, relative to the
// file's folder, and must stay in that tree. A build that cannot be read
// is an error of its manifest. Each resolved build's image name (the
// digest of its inputs) goes into the revision.
func (r *Reader) resolveBuilds(root Root, e Entry, ms []manifest.Sourced) {
	if root.Builds == nil {
		// A source path that is one file has no folder of its own: the
		// file's folder (/etc/hostlet, with the host's token and config)
		// is not the source's to build from.
		for i := range ms {
			for j, c := range ms[i].Manifest.Containers {
				if c.Build != nil {
					ms[i].Errors = append(ms[i].Errors, &manifest.Error{Origin: ms[i].Origin, Pod: ms[i].Manifest.ID, Field: fmt.Sprintf("containers[%d].build.context", j),
						Detail: "this source is one file, with no folder to build from: make the source's path the folder holding the manifest and its build contexts"})
				}
			}
		}
		return
	}
	fsys, err := root.Builds()
	if err != nil {
		for i := range ms {
			ms[i].Errors = append(ms[i].Errors, &manifest.Error{Origin: ms[i].Origin, Pod: ms[i].Manifest.ID, Detail: "open the source's folder for its builds: " + readDetail(err)})
		}
		return
	}
	rel := e.Path
	if root.BuildPath != nil {
		rel = root.BuildPath(e.Path)
	}
	for i := range ms {
		resolveBuilds(&ms[i], func(ctx string) (buildctx.Folder, string, error) {
			p := path.Join(path.Dir(rel), ctx)
			if path.IsAbs(ctx) || !fs.ValidPath(p) {
				return nil, "", fmt.Errorf("must be a folder of %s, relative to the manifest's file", r.opts.Of)
			}
			return buildFolder{fsys: fsys, dir: p, cache: r.contexts}, p, nil
		}, r.hash)
	}
}

// resolveBuilds resolves every build of native manifest s (copying its
// containers before changing them), its context folders found by open (a
// context as written to the folder and its path in the tree); a problem
// is an error of the manifest. Each resolved image name goes into h.
func resolveBuilds(s *manifest.Sourced, open func(ctx string) (buildctx.Folder, string, error), h io.Writer) {
	cloned := false
	for j := range s.Manifest.Containers {
		c := s.Manifest.Containers[j]
		if c.Build == nil {
			continue
		}
		if !cloned {
			s.Manifest.Containers = append([]manifest.Container(nil), s.Manifest.Containers...)
			cloned = true
		}
		field := fmt.Sprintf("containers[%d].build", j)
		folder, ctxPath, err := open(c.Build.Context)
		if err == nil {
			err = buildctx.Resolve(s.Manifest.ID, &c, ctxPath, folder)
		}
		if err != nil {
			var fe *buildctx.FieldError
			if errors.As(err, &fe) {
				s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Field: field + "." + fe.Field, Detail: fe.Detail})
			} else {
				s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Field: field + ".context", Detail: fmt.Sprintf("%q: %v", c.Build.Context, err)})
			}
			continue
		}
		s.Manifest.Containers[j] = c
		fmt.Fprintf(h, "build\x00%s\x00", c.Image)
	}
}

// buildFolder is folder dir of a tree as a build's context: no link is
// followed, only regular files are read, each within the limits of a
// manifest file, once per read of the source (cache).
type buildFolder struct {
	fsys  fs.FS
	dir   string
	cache *contextCache
}

func (b buildFolder) ReadDir(name string) ([]buildctx.Entry, error) {
	des, err := fs.ReadDir(b.fsys, path.Join(b.dir, name))
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
		}
		return nil, unwrapPath(err)
	}
	out := make([]buildctx.Entry, 0, len(des))
	for _, d := range des {
		e := buildctx.Entry{Name: d.Name(), Dir: d.IsDir(), Link: d.Type()&fs.ModeSymlink != 0}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				e.Exec = fi.Mode()&0o111 != 0
			}
		}
		out = append(out, e)
	}
	return out, nil
}

func (b buildFolder) ReadFile(name string) ([]byte, error) {
	full := path.Join(b.dir, name)
	if fi, err := fs.Lstat(b.fsys, full); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, errors.New("a symbolic link; links are not followed in a build context")
		case fi.Mode().IsRegular() && fi.Size() > manifest.MaxSize:
			return nil, tooLarge(fi.Size())
		}
	}
	data, err := b.cache.read(full, func() ([]byte, error) {
		data, _, err := readFile(b.fsys, full)
		return data, err
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
		}
		return nil, unwrapPath(err)
	}
	return data, nil
}
