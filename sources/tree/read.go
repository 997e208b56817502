package tree

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// Options are the settings of one read of a source's tree.
type Options struct {
	// Source is the source's name, in origins.
	Source string
	// Renderer renders the Compose projects; nil: a project is an error
	// saying so.
	Renderer *project.Renderer
	// Fatal reports an error of fsys that fails the whole read (a git
	// object that cannot be read: the repository is damaged), not only
	// the file's; nil: none does.
	Fatal func(error) bool
	// Of is what a build's context must be a folder of, in errors ("the
	// source", "the repository").
	Of string
	// BoundNamesNext: the error of a tree past
	// manifest.MaxSourceManifests names the first file not read (no file
	// when the last one crossed the bound), as the git source's always
	// has; else it names the file whose manifests crossed the bound.
	BoundNamesNext bool
}

// Root is one path of a source: the tree holding it, what was listed
// there, and how its files are named.
type Root struct {
	// FS is the tree, and Entries the path's files and projects in it.
	FS      fs.FS
	Entries []Entry
	// Name names a file (a project's folder) of FS, by its path there, in
	// origins and errors and in the revision; nil: by its path.
	Name func(path string) string
	// Folder is the name of FS's folder ".", the name of a project there
	// whose Compose file sets none.
	Folder string
	// Builds opens the tree a build's context is read from, a folder of
	// it relative to the manifest's file; nil: the path is one file, with
	// no folder to build from. BuildPath is a file's path there, from its
	// path in FS; nil: the same.
	Builds    func() (fs.FS, error)
	BuildPath func(path string) string
}

func (r Root) name(p string) string {
	if r.Name == nil {
		return p
	}
	return r.Name(p)
}

// Reader reads the roots of one source, in order, into one set: every
// manifest decoded, the files counted, the errors, and the revision (a
// hash of every file read and every build's image). Not safe for
// concurrent use.
type Reader struct {
	opts     Options
	ms       []manifest.Sourced
	files    int
	errs     *multierror.Error
	hash     hash.Hash
	contexts *contextCache
	// last is the name of the last file (project) read; full is set
	// once the bound is crossed: nothing more is read.
	last string
	full bool
	// plain: the files read that are not wholly encrypted (Snapshot.Plain).
	plain map[string]string
	// kubeSealed are the encrypted values of the SOPS files holding
	// Kubernetes objects, each with its file (sealKube).
	kubeSealed map[string]*manifest.Sealed
}

// NewReader returns a Reader of one read of a source.
func NewReader(opts Options) *Reader {
	return &Reader{opts: opts, hash: sha256.New(), contexts: newContextCache()}
}

// Fail adds an error of the source (a path that could not be listed).
func (r *Reader) Fail(err error) { r.errs = multierror.Append(r.errs, err) }

// Full reports whether the source is past manifest.MaxSourceManifests:
// nothing more is read, and the read fails.
func (r *Reader) Full() bool { return r.full }

// Read reads root's entries in order: each file decoded (its builds'
// contexts read), each project bundled and rendered. An error of a file is
// the source's (in Result); Read returns only an error Options.Fatal
// reports, and the read is then void.
func (r *Reader) Read(ctx context.Context, root Root) error {
	for _, e := range root.Entries {
		name := root.name(e.Path)
		if r.pastBound(name) {
			return nil
		}
		var err error
		if e.Project {
			err = r.readProject(ctx, root, e, name)
		} else {
			err = r.readFile(root, e, name)
		}
		if err != nil {
			return err
		}
		r.last = name
	}
	return nil
}

// pastBound reports whether the source is past the bound before the file
// next is read, adding the error the first time.
func (r *Reader) pastBound(next string) bool {
	if !r.full && len(r.ms) > manifest.MaxSourceManifests {
		r.full = true
		name := r.last
		if r.opts.BoundNamesNext {
			name = next
		}
		r.Fail(manifest.TooManyInSource(manifest.Origin{Source: r.opts.Source, File: name}))
	}
	return r.full
}

// Result returns what was read (its Kubernetes objects translated into
// pods with the renderer's helper): the manifests, the files read and the
// revision ("sha256:" and 16 hex digits) of a snapshot, and the source's
// errors, a *multierror.Error of *manifest.Error beside everything that
// did decode (callers that need an atomic set treat any error as
// failure).
func (r *Reader) Result(ctx context.Context) (manifest.Snapshot, error) {
	if len(r.ms) > manifest.MaxSourceManifests && !errors.Is(r.errs.ErrorOrNil(), manifest.ErrTooManyManifests) {
		name := r.last
		if r.opts.BoundNamesNext {
			name = ""
		}
		r.Fail(manifest.TooManyInSource(manifest.Origin{Source: r.opts.Source, File: name}))
	}
	ms, err := project.TranslateKube(ctx, r.opts.Renderer, r.opts.Source, r.ms, r.sealKube)
	if err != nil {
		r.Fail(err)
	}
	snap := manifest.Snapshot{Files: r.files, Manifests: ms, Revision: "sha256:" + hex.EncodeToString(r.hash.Sum(nil))[:16], Plain: r.plain}
	return snap, r.errs.ErrorOrNil()
}

// readFile reads and decodes manifest file e of root, named name.
func (r *Reader) readFile(root Root, e Entry, name string) error {
	origin := manifest.Origin{Source: r.opts.Source, File: name}
	data, err := readManifest(root.FS, e)
	if err != nil {
		if r.opts.Fatal != nil && r.opts.Fatal(err) {
			return err
		}
		r.Fail(&manifest.Error{Origin: origin, Detail: readDetail(err), Err: err})
		return nil
	}
	r.files++
	fmt.Fprintf(r.hash, "%s\x00%d\x00", name, len(data))
	r.hash.Write(data)
	ms, plain, sealed, err := decodeFile(data, origin)
	r.notePlain(name, plain)
	r.noteKubeSealed(ms, sealed)
	if hasBuild(ms) {
		r.resolveBuilds(root, e, ms)
	}
	r.ms = append(r.ms, ms...)
	if err != nil {
		r.Fail(err)
	}
	return nil
}

// readManifest reads manifest file e of fsys at the path it resolves to
// (see resolver), within the limits of a manifest file.
func readManifest(fsys fs.FS, e Entry) ([]byte, error) {
	if e.Size > manifest.MaxSize {
		return nil, tooLarge(e.Size)
	}
	name := e.Path
	if rs, ok := fsys.(resolver); ok {
		var err error
		if name, err = rs.Resolve(name); err != nil {
			return nil, err
		}
	}
	data, _, err := readFile(fsys, name)
	return data, err
}

// resolver is a tree whose manifest files may be links (a folder's, for a
// checkout deployed as "current -> release-N"): Resolve returns the path
// in the tree the file's links lead to, or an error (naming no content)
// when they lead out of it. A manifest file is opened at that path.
type resolver interface {
	Resolve(name string) (string, error)
}

// readFile reads the file name of fsys, within the limits of a manifest
// file: a regular file (a FIFO or a device named like a manifest is an
// error, not a hang: fsys opens without blocking), none over
// manifest.MaxSize. It also reports whether the file is executable.
func readFile(fsys fs.FS, name string) ([]byte, bool, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Size() > manifest.MaxSize {
		return nil, false, tooLarge(fi.Size())
	}
	data, err := manifest.ReadLimited(f, manifest.MaxSize)
	return data, fi.Mode()&0o111 != 0, err
}

// tooLarge is the error of a file of size bytes, over manifest.MaxSize.
func tooLarge(size int64) error {
	return fmt.Errorf("%d bytes: %w of %d bytes", size, manifest.ErrTooLarge, manifest.MaxSize)
}

// readDetail is the detail of a file's read error: a *fs.PathError
// without its path (the origin names the file).
func readDetail(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s: %v", pe.Op, pe.Err)
	}
	return err.Error()
}

// unwrapPath is err without the path a *fs.PathError names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
