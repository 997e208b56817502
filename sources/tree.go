package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
)

// manifestExts are the file endings read from a folder.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// TreeResult is what reading a set of paths produced.
type TreeResult struct {
	// Manifests decoded without error, in order: paths as listed, then file
	// path (sorted), then document index.
	Manifests []manifest.Sourced
	// Files is how many manifest files were read.
	Files int
	// Revision is a hash of every file's name and content.
	Revision string
}

// ReadTree reads paths (files or folders, relative to base when base is not
// "") as one source named source. Folders are walked in sorted order; hidden
// files and folders are skipped; only .yaml, .yml and .json files are read.
// Origins name files relative to base (or as given when base is "").
//
// A path that does not exist, an unreadable file or a symlink loop is an
// error. Decode errors of individual files are returned as a
// *multierror.Error of *manifest.Error together with everything that did
// decode; callers that need an atomic set must treat any error as failure.
func ReadTree(base string, paths []string, source string) (TreeResult, error) {
	var (
		res   TreeResult
		errs  *multierror.Error
		files []string
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
	for _, f := range files {
		name := display(base, f)
		origin := manifest.Origin{Source: source, File: name}
		data, err := readManifestFile(f)
		if err != nil {
			errs = multierror.Append(errs, &manifest.Error{Origin: origin, Detail: readDetail(err)})
			continue
		}
		res.Files++
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(data))
		h.Write(data)
		ms, err := manifest.Decode(data, origin)
		res.Manifests = append(res.Manifests, ms...)
		if err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	res.Revision = "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
	return res, errs.ErrorOrNil()
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

// listFiles returns the manifest files of one path: the path itself when it
// is a file, else the sorted manifest files below it. A path that is a
// symlink to a folder is walked as that folder (a checkout deployed as
// "current -> release-N"); the files are named below the path as given.
func listFiles(p string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", "stat", unwrapPath(err))
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	root, err := walkRoot(p)
	if err != nil {
		return nil, err
	}
	var out []string
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
			return nil
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
		out = append(out, underPath(p, root, path))
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
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

// underPath names path (found below root, the resolved p) below p.
func underPath(p, root, path string) string {
	if root == p {
		return path
	}
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.Join(p, rel)
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
