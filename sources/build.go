package sources

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/buildctx"
)

// MaxBuildBytes bounds the bytes one read of a source reads for its
// builds' contexts together; a file read for several builds (pods built
// from one folder) counts once, and is held once.
const MaxBuildBytes = 2 * buildctx.MaxBytes

// ContextCache is what one read of a source has read for its builds: each
// file once, by its path in the source, its bytes shared by every build
// that has it (a Files value is immutable), within MaxBuildBytes.
type ContextCache struct {
	files map[string][]byte
	bytes int
}

// NewContextCache returns an empty cache for one read of a source.
func NewContextCache() *ContextCache { return &ContextCache{files: map[string][]byte{}} }

// errBuildBytes is the error of a read past MaxBuildBytes.
var errBuildBytes = fmt.Errorf("the builds of this source read more than %d bytes of context files together", MaxBuildBytes)

// Read returns the file at name (its path in the source), read with read
// the first time.
func (c *ContextCache) Read(name string, read func() ([]byte, error)) ([]byte, error) {
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

// rootFolder is folder dir of a source's os.Root as a build context: no
// link is followed, only regular files are read, each within the limits
// of a manifest file, once per read of the source (cache).
type rootFolder struct {
	root  *os.Root
	dir   string
	cache *ContextCache
}

func (r rootFolder) ReadDir(name string) ([]buildctx.Entry, error) {
	des, err := fs.ReadDir(r.root.FS(), path.Join(r.dir, name))
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

func (r rootFolder) ReadFile(name string) ([]byte, error) {
	full := path.Join(r.dir, name)
	if fi, err := r.root.Lstat(full); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errors.New("a symbolic link; links are not followed in a build context")
	}
	data, err := r.cache.Read(full, func() ([]byte, error) { return readInRoot(r.root, filepath.FromSlash(full)) })
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
		}
		return nil, unwrapPath(err)
	}
	return data, nil
}

// resolveBuilds reads the builds of native manifests decoded from the
// file at rel (slash-separated) below root: a build's context is relative
// to the file's folder and must stay inside root. A build that cannot be
// read is an error of its manifest. Each resolved build's image name
// (the digest of its inputs) goes into h, the tree's revision.
func resolveBuilds(ms []manifest.Sourced, root *os.Root, rel string, cache *ContextCache, h io.Writer) {
	for i := range ms {
		ResolveBuilds(&ms[i], func(ctx string) (buildctx.Folder, string, error) {
			p := path.Join(path.Dir(rel), ctx)
			if path.IsAbs(ctx) || !fs.ValidPath(p) {
				return nil, "", errors.New("must be a folder of the source, relative to the manifest's file")
			}
			return rootFolder{root: root, dir: p, cache: cache}, p, nil
		}, h)
	}
}

// ResolveBuilds resolves every build of native manifest s (copying its
// containers before changing them), its context folders found by open (a
// context as written to the folder and its path in the source); a
// problem is an error of the manifest. Each resolved image name goes
// into h.
func ResolveBuilds(s *manifest.Sourced, open func(ctx string) (buildctx.Folder, string, error), h io.Writer) {
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
