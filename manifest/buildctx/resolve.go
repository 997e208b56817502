package buildctx

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/hostlet/hostlet/manifest"
)

// Bounds of one build context after .dockerignore: its files, and their
// bytes together (a project's bundle has the same).
const (
	MaxFiles = 2000
	MaxBytes = 4 * manifest.MaxSize
	// MaxRecipe bounds a Dockerfile.
	MaxRecipe = 1 << 20
	// MaxIgnorePatterns bounds a .dockerignore's patterns and
	// MaxIgnoreBytes its size; MaxEntries the files and folders of a
	// context looked at, those .dockerignore excludes included: each
	// entry is matched against every pattern.
	MaxIgnorePatterns = 256
	MaxIgnoreBytes    = 64 << 10
	MaxEntries        = 5 * MaxFiles
)

// DefaultDockerfile is the Dockerfile's name when none is given.
const DefaultDockerfile = "Dockerfile"

// ignoreFile is the context's ignore file.
const ignoreFile = ".dockerignore"

// FieldError is a problem of one field of the build ("context",
// "dockerfile", "target", ...).
type FieldError struct {
	Field  string
	Detail string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Resolve reads the build of container c of pod from folder, the build's
// context, whose path in the source is contextPath: the context's files
// after .dockerignore and the Dockerfile go into the build (Files,
// Recipe), the Dockerfile is parsed (and Target looked up among its
// stages), and c.Image becomes the name derived from the inputs (an
// image the author gave is kept as Build.Image). c.Build is replaced by
// a copy; the Build given is not changed.
func Resolve(pod string, c *manifest.Container, contextPath string, folder Folder) error {
	if c.Build == nil {
		return nil
	}
	b := *c.Build
	if b.Image == "" && c.Image != "" && !IsBuilt(c.Image) {
		b.Image = c.Image
	}
	recipe, err := readRecipe(&b, folder)
	if err != nil {
		return err
	}
	if err := CheckRecipe(recipe, b.Target); err != nil {
		return err
	}
	items, err := contextFiles(folder)
	if err != nil {
		return err
	}
	if b.Recipe, err = sentRecipe(recipe); err != nil {
		return err
	}
	b.Files = manifest.NewFiles(contextPath, false, items)
	c.Build = &b
	c.Image = Tag(pod, c.Name, &b)
	return nil
}

// readRecipe reads the Dockerfile: inline, or a file of the context.
func readRecipe(b *manifest.Build, folder Folder) (string, error) {
	if b.DockerfileInline != "" {
		if b.Dockerfile != "" {
			return "", fieldErr("dockerfileInline", "give dockerfile or dockerfileInline, not both")
		}
		return b.DockerfileInline, nil
	}
	name := cmp.Or(b.Dockerfile, DefaultDockerfile)
	clean := path.Clean(name)
	if path.IsAbs(name) || !fs.ValidPath(clean) {
		return "", fieldErr("dockerfile", "%q: must be a file of the context (a relative path inside it)", name)
	}
	data, err := folder.ReadFile(clean)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fieldErr("dockerfile", "%s: no such file in the context", name)
	case err != nil:
		return "", fieldErr("dockerfile", "%s: %v", name, err)
	case len(data) > MaxRecipe:
		return "", fieldErr("dockerfile", "%s: over %d bytes", name, MaxRecipe)
	}
	return string(data), nil
}

// contextFiles reads every file of the context that .dockerignore does not
// exclude, in path order.
func contextFiles(folder Folder) ([]manifest.FileItem, error) {
	pm, err := ignoreMatcher(folder)
	if err != nil {
		return nil, err
	}
	w := &walker{folder: folder, pm: pm}
	if err := w.walk(""); err != nil {
		return nil, err
	}
	return w.items, nil
}

func ignoreMatcher(folder Folder) (*patternmatcher.PatternMatcher, error) {
	data, err := folder.ReadFile(ignoreFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fieldErr("context", "%s: %v", ignoreFile, err)
	}
	if len(data) > MaxIgnoreBytes {
		return nil, fieldErr("context", "%s: %d bytes, over the limit of %d", ignoreFile, len(data), MaxIgnoreBytes)
	}
	patterns, err := ignorefile.ReadAll(strings.NewReader(string(data)))
	if err != nil {
		return nil, fieldErr("context", "%s: %v", ignoreFile, err)
	}
	if len(patterns) > MaxIgnorePatterns {
		return nil, fieldErr("context", "%s: %d patterns, over the limit of %d", ignoreFile, len(patterns), MaxIgnorePatterns)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, fieldErr("context", "%s: %v", ignoreFile, err)
	}
	return pm, nil
}

type walker struct {
	folder Folder
	pm     *patternmatcher.PatternMatcher
	items  []manifest.FileItem
	bytes  int
	// entries counts the entries looked at.
	entries int
}

// walk reads folder dir ("" the context) and below.
func (w *walker) walk(dir string) error {
	entries, err := w.folder.ReadDir(dir)
	if err != nil {
		if dir == "" && errors.Is(err, fs.ErrNotExist) {
			return fieldErr("context", "not a folder of the source at this revision")
		}
		return fieldErr("context", "%s: %v", cmp.Or(dir, "."), err)
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	for _, e := range entries {
		name := path.Join(dir, e.Name)
		if w.entries++; w.entries > MaxEntries {
			return fieldErr("context", "more than %d files and folders, those %s excludes included (list a large folder by its name in %s, without exceptions below it)", MaxEntries, ignoreFile, ignoreFile)
		}
		excluded, err := w.excluded(name)
		if err != nil {
			return fieldErr("context", "%s: %v", ignoreFile, err)
		}
		if excluded && (!e.Dir || !w.pm.Exclusions()) {
			continue
		}
		switch {
		case e.Link:
			return fieldErr("context", "%s: a symbolic link; links are not followed in a build context (list it in %s)", name, ignoreFile)
		case e.Dir:
			if err := w.walk(name); err != nil {
				return err
			}
			continue
		}
		if len(w.items) == MaxFiles {
			return fieldErr("context", "more than %d files after %s", MaxFiles, ignoreFile)
		}
		data, err := w.folder.ReadFile(name)
		if err != nil {
			return fieldErr("context", "%s: %v", name, err)
		}
		if w.bytes += len(data); w.bytes > MaxBytes {
			return fieldErr("context", "its files hold more than %d bytes after %s", MaxBytes, ignoreFile)
		}
		mode := uint32(0)
		if e.Exec {
			mode = manifest.FileModeExe
		}
		w.items = append(w.items, manifest.FileItem{Path: name, Data: data, Mode: mode})
	}
	return nil
}

func (w *walker) excluded(name string) (bool, error) {
	if w.pm == nil {
		return false, nil
	}
	return w.pm.MatchesOrParentMatches(name)
}

// IsBuilt reports whether image is a name hostlet gives the images it
// builds.
func IsBuilt(image string) bool {
	return strings.HasPrefix(image, manifest.BuildRepository+"/")
}

// digestLen is the hex digits of the inputs' digest in a tag.
const digestLen = 32

// maxRepoName bounds the <pod>-<container> part of a built image's name
// (the engine takes names of at most 255 bytes).
const maxRepoName = 160

// Tag is the image name of a resolved build of container of pod:
// BuildRepository/<pod>-<container>:<digest of the inputs>. A
// <pod>-<container> over maxRepoName bytes is cut, and ends with a hash
// of the whole instead.
func Tag(pod, container string, b *manifest.Build) string {
	return manifest.BuildRepository + "/" + RepoName(pod, container) + ":" + Digest(b)[:digestLen]
}

// RepoName is the <pod>-<container> part of the name of pod's container's
// built image.
func RepoName(pod, container string) string {
	name := pod + "-" + container
	if len(name) <= maxRepoName {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:maxRepoName-17], ".-_") + "-" + hex.EncodeToString(sum[:8])
}

// Digest is the hex SHA-256 of a resolved build's inputs: the context's
// files, the Dockerfile, args, target, labels, network and extra hosts.
// NoCache and Pull are not inputs, and neither is Image.
func Digest(b *manifest.Build) string {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	putMap := func(m map[string]string) {
		put(fmt.Sprint(len(m)))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			put(k)
			put(m[k])
		}
	}
	put("hostlet build v1")
	if b.Files != nil {
		put(b.Files.Digest())
	} else {
		put("")
	}
	put(b.Recipe)
	put(RecipeName(b))
	putMap(b.Args)
	put(strings.ToLower(b.Target))
	putMap(b.Labels)
	put(b.Network)
	put(fmt.Sprint(len(b.ExtraHosts)))
	for _, e := range b.ExtraHosts {
		put(e)
	}
	return hex.EncodeToString(h.Sum(nil))
}
