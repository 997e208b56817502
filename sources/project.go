package sources

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// errNoRenderer is the error of a project read without a renderer.
var errNoRenderer = errors.New("compose projects are not read here (no renderer)")

// readProject bundles the project folder f and renders it with r; every
// file bundled goes into the tree's revision hash h. It returns the pods,
// the number of files read and the project's errors.
func readProject(ctx context.Context, r *project.Renderer, roots map[string]*os.Root, f treeFile, opts project.Options, h io.Writer) ([]manifest.Sourced, int, error) {
	b, err := bundleFolder(roots, f)
	b.Options = opts
	if err == nil && r == nil {
		err = errNoRenderer
	}
	if err != nil {
		return nil, len(b.Files), &multierror.Error{Errors: []error{&manifest.Error{Origin: manifest.Origin{Source: opts.Source, File: opts.Dir}, Detail: err.Error(), Err: err}}}
	}
	names := make([]string, 0, len(b.Files))
	for n := range b.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fl := b.Files[n]
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00%t\x00", path.Join(opts.Dir, n), len(fl.Data), fl.Err, fl.Exec)
		h.Write(fl.Data)
	}
	ms, err := r.Render(ctx, b)
	return ms, len(b.Files), err
}

// bundleFolder reads every file below the project folder f (hidden files
// included, hidden folders not) through the os.Root of the source folder,
// with the limits of a manifest file: a link leaving the folder, or
// anything but a regular file, is bundled as its error, never opened.
func bundleFolder(roots map[string]*os.Root, f treeFile) (project.Bundle, error) {
	var b project.Bundle
	r, err := rootOf(roots, f.root)
	if err != nil {
		return b, err
	}
	dir := filepath.Join(f.root, f.rel)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, exec, readErr := readInRootExec(r, filepath.Join(f.rel, rel))
		if readErr != nil {
			readErr = unwrapPath(readErr)
		}
		name := filepath.ToSlash(rel)
		if err := b.Add(name, data, readErr); err != nil {
			return err
		}
		if exec {
			b.SetExecutable(name)
		}
		return nil
	})
	return b, err
}
