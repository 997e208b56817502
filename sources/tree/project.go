package tree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// ErrNoRenderer is the error of a Compose project read without a
// renderer.
var ErrNoRenderer = errors.New("compose projects are not read here (no renderer)")

// readProject bundles the project folder e of root, named name, and
// renders it; every file bundled goes into the revision. It returns only
// an error Options.Fatal reports.
func (r *Reader) readProject(ctx context.Context, root Root, e Entry, name string) error {
	opts := project.Options{Source: r.opts.Source, Dir: name, Name: root.Folder, File: e.File}
	if e.Path != "." {
		opts.Name = path.Base(e.Path)
	}
	b, err := r.bundle(root.FS, e.Path)
	if err != nil && r.opts.Fatal != nil && r.opts.Fatal(err) {
		return err
	}
	b.Options = opts
	if err == nil && r.opts.Renderer == nil {
		err = ErrNoRenderer
	}
	r.files += len(b.Files)
	if err != nil {
		r.Fail(&multierror.Error{Errors: []error{&manifest.Error{Origin: manifest.Origin{Source: opts.Source, File: opts.Dir}, Detail: err.Error(), Err: err}}})
		return nil
	}
	if opts.File != "" {
		// Which of the folder's files is the Compose file is part of the
		// revision (a project named by its folder hashes as before).
		fmt.Fprintf(r.hash, "compose-file\x00%s\x00", opts.File)
	}
	for _, n := range b.Names() {
		fl := b.Files[n]
		fmt.Fprintf(r.hash, "%s\x00%d\x00%s\x00%t\x00", path.Join(opts.Dir, n), len(fl.Data), fl.Err, fl.Exec)
		r.hash.Write(fl.Data)
	}
	secrets, err := prepareSecrets(&b, opts.Dir)
	if secrets != nil {
		for name, why := range secrets.plain {
			r.notePlain(name, why)
		}
	}
	if err != nil {
		r.Fail(&multierror.Error{Errors: []error{&manifest.Error{Origin: manifest.Origin{Source: opts.Source, File: opts.Dir}, Detail: err.Error()}}})
		return nil
	}
	ms, err := r.opts.Renderer.Render(ctx, b)
	for i := range ms {
		secrets.seal(&ms[i])
	}
	r.ms = append(r.ms, ms...)
	if err != nil {
		r.Fail(err)
	}
	return nil
}

// bundle reads every file below folder dir of fsys (hidden files
// included, hidden folders not), named below dir, with the limits of a
// manifest file; a file that cannot be read (a link fsys does not follow,
// anything but a regular file, a file over the size limit) is bundled as
// its error, without the path a *fs.PathError names.
func (r *Reader) bundle(fsys fs.FS, dir string) (project.Bundle, error) {
	var b project.Bundle
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return b, err
	}
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		data, exec, readErr := readFile(sub, p)
		if readErr != nil {
			if r.opts.Fatal != nil && r.opts.Fatal(readErr) {
				return readErr
			}
			readErr = unwrapPath(readErr)
		}
		if err := b.Add(p, data, readErr); err != nil {
			return err
		}
		if exec {
			b.SetExecutable(p)
		}
		return nil
	})
	return b, err
}
