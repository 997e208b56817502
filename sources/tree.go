package sources

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// manifestExts are the file endings read from a folder.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// ReadTree reads paths (files or folders, relative to base when base is not
// "") as one source named source. Folders are walked in sorted order; hidden
// files and folders are skipped; only .yaml, .yml and .json files are read.
// A folder holding a Compose file (compose.yaml, ...) is a Compose project,
// read with host's settings: everything below it is the project's data,
// never native manifests. Origins name files relative to base (or as given
// when base is "").
//
// A path that does not exist, an unreadable file or a symlink loop is an
// error. Below a folder, a file whose resolved path leaves the folder (its
// own symlinks resolved: "current -> release-N" is the folder release-N) is
// an error naming the file, and it is never opened: a link to a root-only
// file outside must not show its lines in an error. Decode errors of individual files are returned as a
// *multierror.Error of *manifest.Error together with everything that did
// decode; callers that need an atomic set must treat any error as failure.
//
// Projects are rendered by r (nil: a project is an error saying so).
func ReadTree(ctx context.Context, base string, paths []string, source string, r *project.Renderer) (manifest.Snapshot, error) {
	var (
		res   = manifest.Snapshot{Name: source}
		errs  *multierror.Error
		files []treeFile
	)
	h := sha256.New()
	for _, p := range paths {
		full := p
		if base != "" && !filepath.IsAbs(p) {
			full = filepath.Join(base, p)
		}
		found, err := listFiles(full)
		if err != nil {
			errs = multierror.Append(errs, &manifest.Error{Origin: manifest.Origin{Source: source, File: display(base, full)}, Detail: err.Error()})
			continue
		}
		files = append(files, found...)
	}
	roots := map[string]*os.Root{}
	var contexts *ContextCache // the builds' files, read once
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	for i, f := range files {
		name := display(base, f.name)
		if i > 0 && len(res.Manifests) > manifest.MaxSourceManifests {
			// Reading stops at the file past the bound: the source is
			// refused whole.
			errs = multierror.Append(errs, manifest.TooManyInSource(manifest.Origin{Source: source, File: display(base, files[i-1].name)}))
			break
		}
		if f.project {
			ms, files, err := readProject(ctx, r, roots, f, project.Options{Source: source, Dir: name, Name: folderName(f.name)}, h)
			res.Files += files
			res.Manifests = append(res.Manifests, ms...)
			if err != nil {
				errs = multierror.Append(errs, err)
			}
			continue
		}
		origin := manifest.Origin{Source: source, File: name}
		data, err := f.read(roots)
		if err != nil {
			errs = multierror.Append(errs, &manifest.Error{Origin: origin, Detail: readDetail(err), Err: err})
			continue
		}
		res.Files++
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
		ms, err := manifest.Decode(data, origin)
		if hasBuild(ms) {
			if contexts == nil {
				contexts = NewContextCache()
			}
			f.resolveBuilds(ms, roots, base, contexts, h)
		}
		res.Manifests = append(res.Manifests, ms...)
		if err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	if n := len(files); n > 0 && len(res.Manifests) > manifest.MaxSourceManifests && !errors.Is(errs.ErrorOrNil(), manifest.ErrTooManyManifests) {
		errs = multierror.Append(errs, manifest.TooManyInSource(manifest.Origin{Source: source, File: display(base, files[n-1].name)}))
	}
	res.Revision = "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
	return res, errs.ErrorOrNil()
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

// resolveBuilds reads the builds of the manifests of file f through the
// os.Root of the folder a build's context must stay in: base, the folder
// every path of the source is relative to (a git checkout's), else the
// source path's folder (or the file's own folder for a source path that
// is a file).
func (f treeFile) resolveBuilds(ms []manifest.Sourced, roots map[string]*os.Root, base string, contexts *ContextCache, h io.Writer) {
	dir, rel := f.root, filepath.ToSlash(f.rel)
	switch {
	case base != "":
		dir, rel = base, display(base, f.name)
	case dir == "":
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
	r, err := rootOf(roots, dir)
	if err != nil {
		for i := range ms {
			ms[i].Errors = append(ms[i].Errors, &manifest.Error{Origin: ms[i].Origin, Pod: ms[i].Manifest.ID, Detail: "open the source's folder for its builds: " + readDetail(err)})
		}
		return
	}
	resolveBuilds(ms, r, rel, contexts, h)
}

func readDetail(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", pe.Op, pe.Err)
	}
	return err.Error()
}

func display(base, p string) string {
	if base == "" {
		return p
	}
	if rel, err := filepath.Rel(base, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

// errOutsideRoot is the read error of a file whose resolved path leaves
// the folder it was found in.
var errOutsideRoot = errors.New("resolves outside the source root")

// treeFile is one manifest file or Compose project found by listFiles.
type treeFile struct {
	// name is the file's (the project folder's) path below the source
	// path as given.
	name string
	// root is the source folder with every symlink resolved, and rel the
	// file's (project folder's) path below it; root is "" for a source
	// path that is a file.
	root, rel string
	// project marks a Compose project's folder.
	project bool
}

// folderName is the name of folder dir, "." and ".." resolved.
func folderName(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return filepath.Base(abs)
	}
	return filepath.Base(dir)
}

// isProject reports whether folder dir holds a Compose file.
func isProject(dir string) bool {
	for _, n := range project.ProjectFiles {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// read reads the file. A file below a folder is opened through an os.Root
// of that folder (kept in roots, one per folder), at its resolved path, once
// that path is known to lie inside the folder: a link out of the folder is
// refused before anything is opened, and a link swapped after the check
// still cannot escape, as os.Root refuses any path leaving it.
func (f treeFile) read(roots map[string]*os.Root) ([]byte, error) {
	if f.root == "" {
		return readManifestFile(f.name)
	}
	resolved, err := filepath.EvalSymlinks(filepath.Join(f.root, f.rel))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", "resolve symlink", unwrapPath(err))
	}
	inner, err := filepath.Rel(f.root, resolved)
	if err != nil || inner == ".." || strings.HasPrefix(inner, ".."+string(filepath.Separator)) || filepath.IsAbs(inner) {
		return nil, fmt.Errorf("%w %s; not read", errOutsideRoot, f.root)
	}
	r, err := rootOf(roots, f.root)
	if err != nil {
		return nil, err
	}
	return readInRoot(r, inner)
}

// rootOf is the os.Root of folder dir, opened once per read of a tree.
func rootOf(roots map[string]*os.Root, dir string) (*os.Root, error) {
	if r := roots[dir]; r != nil {
		return r, nil
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	roots[dir] = r
	return r, nil
}

// readInRoot reads the file name of root r: no link out of it, regular
// files only, none over manifest.MaxSize.
func readInRoot(r *os.Root, name string) ([]byte, error) {
	data, _, err := readInRootExec(r, name)
	return data, err
}

// readInRootExec is readInRoot that also says whether the file is
// executable (the file opened, not a link to it).
func readInRootExec(r *os.Root, name string) ([]byte, bool, error) {
	file, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, false, err
	}
	data, err := readOpened(file)
	return data, fi.Mode()&0o111 != 0, err
}

// listFiles returns the manifest files of one path: the path itself when it
// is a file, else the sorted manifest files below it. A path that is a
// symlink to a folder (a checkout deployed as "current -> release-N"), or
// below one, is walked as its resolved folder, which is the root its files
// must stay in; the files are named below the path as given.
func listFiles(p string) ([]treeFile, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", "stat", unwrapPath(err))
	}
	if !fi.IsDir() {
		if project.IsProjectFile(filepath.Base(p)) {
			// A Compose file named as the path: its folder is the project.
			dir := filepath.Dir(p)
			root, err := filepath.EvalSymlinks(dir)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", "resolve symlink", unwrapPath(err))
			}
			return []treeFile{{name: dir, root: root, rel: ".", project: true}}, nil
		}
		return []treeFile{{name: p}}, nil
	}
	root, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", "resolve symlink", unwrapPath(err))
	}
	var out []treeFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !isProject(path) {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, treeFile{name: filepath.Join(p, rel), root: root, rel: rel, project: true})
			return filepath.SkipDir
		}
		if !manifestExts[strings.ToLower(filepath.Ext(d.Name()))] {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// Follow links to files; a link to a folder or a loop is an error.
			st, err := os.Stat(path)
			if err != nil {
				return err
			}
			if st.IsDir() {
				return fmt.Errorf("%s: symlink to a folder is not followed", path)
			}
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, treeFile{name: filepath.Join(p, rel), root: root, rel: rel})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
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

// readManifestFile reads one manifest file. It opens without blocking and
// refuses anything but a regular file, so a FIFO or device named like a
// manifest is an error, not a hang; a file over manifest.MaxSize is refused
// before it is read.
func readManifestFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readOpened(f)
}

// readOpened reads an opened manifest file: only a regular file, and none
// over manifest.MaxSize.
func readOpened(f *os.File) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > manifest.MaxSize {
		return nil, fmt.Errorf("%d bytes: %w of %d bytes", fi.Size(), manifest.ErrTooLarge, manifest.MaxSize)
	}
	return manifest.ReadLimited(f, manifest.MaxSize)
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
