package tree

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/hostlet/hostlet/manifest/project"
)

// manifestExts are the endings of the files read as manifests.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// Entry is one manifest file, or one Compose project's folder, of a tree.
type Entry struct {
	// Path is the file's (the folder's) path in the tree's fs.FS.
	Path string
	// Project marks a Compose project's folder.
	Project bool
	// File is a project's Compose file when the source path named it by
	// a name of its own (project.Options.File); empty otherwise.
	File string
	// Size is the file's size as listed: a file over manifest.MaxSize is
	// refused before it is opened. 0 when not known (the size is then
	// checked once the file is open).
	Size int64
}

// List lists the manifest files and Compose projects of folder dir of
// fsys, sorted by path. Hidden entries below dir are skipped; a folder
// holding a Compose file is a project, and nothing below it is listed;
// only files ending in .yaml, .yml or .json (in any case) are manifests.
// A manifest that is a symlink is followed with fs.Stat: fsys says which
// links it follows (its error is List's). Any error of fsys is List's.
func List(fsys fs.FS, dir string) ([]Entry, error) {
	var out []Entry
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if !isProject(fsys, p) {
				return nil
			}
			out = append(out, Entry{Path: p, Project: true})
			return fs.SkipDir
		}
		if !manifestExts[strings.ToLower(path.Ext(d.Name()))] {
			return nil
		}
		e := Entry{Path: p}
		if d.Type()&fs.ModeSymlink != 0 {
			if _, err := fs.Stat(fsys, p); err != nil {
				return err
			}
		} else if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			e.Size = fi.Size()
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A file gone since its folder was listed is the read's
			// error; any other is the tree's.
			return err
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// isProject reports whether folder dir of fsys holds a Compose file (an
// entry named like one that is not a folder). A folder that cannot be
// listed is not: walking it fails.
func isProject(fsys fs.FS, dir string) bool {
	des, _ := fs.ReadDir(fsys, dir)
	for _, d := range des {
		if !d.IsDir() && project.IsProjectFile(d.Name()) {
			return true
		}
	}
	return false
}
