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

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
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
	b.Recipe = recipe
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

// CheckRecipe parses a Dockerfile with buildkit's parser and checks that
// target, when given, is one of its stages.
func CheckRecipe(recipe, target string) error {
	res, err := parser.Parse(strings.NewReader(recipe))
	if err != nil {
		return fieldErr("dockerfile", "does not parse: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return fieldErr("dockerfile", "does not parse: %v", err)
	}
	if len(stages) == 0 {
		return fieldErr("dockerfile", "has no FROM")
	}
	if target == "" {
		return nil
	}
	var names []string
	for _, s := range stages {
		if strings.EqualFold(s.Name, target) {
			return nil
		}
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	return fieldErr("target", "%q is not a stage of the Dockerfile (stages: %s)", target, strings.Join(names, ", "))
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
	patterns, err := ignorefile.ReadAll(strings.NewReader(string(data)))
	if err != nil {
		return nil, fieldErr("context", "%s: %v", ignoreFile, err)
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

// Tag is the image name of a resolved build of container of pod:
// BuildRepository/<pod>-<container>:<digest of the inputs>.
func Tag(pod, container string, b *manifest.Build) string {
	return manifest.BuildRepository + "/" + pod + "-" + container + ":" + Digest(b)[:digestLen]
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
