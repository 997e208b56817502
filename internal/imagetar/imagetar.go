package imagetar

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
)

// File is one regular file of the image's only layer. Its content is Data,
// or, when Open is set, Size bytes read from Open (called twice: once to
// hash the layer, once to write it), so a large file is never held in
// memory.
type File struct {
	// Path is the absolute path in the image, e.g. "/demo".
	Path string
	// Mode holds the permission bits (setuid, setgid and sticky included);
	// 0 means 0644.
	Mode os.FileMode
	Data []byte
	Open func() (io.ReadCloser, error)
	Size int64
}

// FromDisk is a File at imagePath whose content is streamed from the file
// at diskPath (its size as it is now).
func FromDisk(diskPath, imagePath string, mode os.FileMode) (File, error) {
	fi, err := os.Stat(diskPath)
	if err != nil {
		return File{}, fmt.Errorf("image file %s: %w", imagePath, err)
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("image file %s: %s is not a regular file", imagePath, diskPath)
	}
	return File{
		Path: imagePath, Mode: mode, Size: fi.Size(),
		Open: func() (io.ReadCloser, error) { return os.Open(diskPath) },
	}, nil
}

// DefaultPath is the PATH put into the image's environment when env has
// none.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is the timestamp of every entry and of the image, so the same input
// always gives the same image ID.
func epoch() time.Time { return time.Unix(0, 0).UTC() }

// Write writes a docker-archive tar holding one image tagged ref (a Docker
// reference with a tag, or none for :latest) whose single layer holds files,
// their parent directories and /tmp (mode 1777). entrypoint and env become
// the image's ENTRYPOINT and ENV (PATH defaults to DefaultPath). The image is
// for linux on the architecture this program was built for.
func Write(w io.Writer, ref string, files []File, entrypoint []string, env []string) error {
	return WriteConfig(w, ref, files, Config{Entrypoint: entrypoint, Env: env})
}

// Config is the image's configuration besides its files. Labels are
// none unless given: the images hostlet makes (its pause image) carry
// none of hostlet's labels, which containers made from them would
// inherit.
type Config struct {
	Entrypoint []string
	Env        []string
	// OnBuild are the image's ONBUILD triggers: instructions a build
	// FROM the image runs first.
	OnBuild []string
	Labels  map[string]string
}

// WriteConfig is Write with the image's configuration given whole.
func WriteConfig(w io.Writer, ref string, files []File, cfg Config) error {
	if err := write(w, ref, files, cfg); err != nil {
		return fmt.Errorf("write image %q: %w", ref, err)
	}
	return nil
}

// write is WriteConfig, its errors without the reference.
func write(w io.Writer, ref string, files []File, cfg Config) error {
	tagged, err := tagOf(ref)
	if err != nil {
		return err
	}
	l, err := newLayer(files)
	if err != nil {
		return err
	}
	// The layer is written twice: first to learn its digest and size (both
	// go into headers that precede it), then into the archive.
	h, n := sha256.New(), &countingWriter{}
	if err := l.write(io.MultiWriter(h, n)); err != nil {
		return err
	}
	layerHex := hex.EncodeToString(h.Sum(nil))
	meta, err := metadata(tagged, layerHex, cfg)
	if err != nil {
		return err
	}
	return writeArchive(w, l, layerHex, n.n, meta)
}

// tagOf parses ref, a Docker reference with a tag (none means :latest) and
// no digest.
func tagOf(ref string) (reference.NamedTagged, error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return nil, fmt.Errorf("parse reference: %w", err)
	}
	if _, ok := named.(reference.Digested); ok {
		return nil, errors.New("a digest reference cannot be used as a tag")
	}
	tagged, ok := reference.TagNameOnly(named).(reference.NamedTagged)
	if !ok {
		return nil, errors.New("reference has no tag")
	}
	return tagged, nil
}

// archiveFile is one file of the archive besides the layer.
type archiveFile struct {
	name string
	data []byte
}

// metadata are the archive's files that describe the image: its config
// (named by its digest), manifest.json and repositories.
func metadata(tagged reference.NamedTagged, layerHex string, c Config) ([]archiveFile, error) {
	env := c.Env
	if !slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "PATH=") }) {
		env = append([]string{DefaultPath}, env...)
	}
	cfg := imageConfig{
		Architecture: goruntime.GOARCH,
		OS:           "linux",
		Created:      epoch(),
		Config: containerConfig{
			Entrypoint: c.Entrypoint,
			Env:        env,
			WorkingDir: "/",
			OnBuild:    c.OnBuild,
			Labels:     c.Labels,
		},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{"sha256:" + layerHex}},
		History: []history{{
			Created: epoch(),
			// The name this package had: the pause image's ID (and every
			// infra container's spec) depend on these bytes.
			CreatedBy: "hostlet imagebuild",
		}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	cfgSum := sha256.Sum256(cfgJSON)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"

	manifest, err := json.Marshal([]manifestEntry{{
		Config:   cfgName,
		RepoTags: []string{reference.FamiliarString(tagged)},
		Layers:   []string{layerHex + "/layer.tar"},
	}})
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	repositories, err := json.Marshal(map[string]map[string]string{
		reference.FamiliarName(tagged): {tagged.Tag(): layerHex},
	})
	if err != nil {
		return nil, fmt.Errorf("encode repositories: %w", err)
	}
	return []archiveFile{{cfgName, cfgJSON}, {"manifest.json", manifest}, {"repositories", repositories}}, nil
}

// writeArchive writes the docker-archive tar: the layer (size bytes, of
// digest layerHex) in its directory, then meta.
func writeArchive(w io.Writer, l *layer, layerHex string, size int64, meta []archiveFile) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(dirHeader(layerHex+"/", 0o755)); err != nil {
		return err
	}
	if err := tw.WriteHeader(fileHeader(layerHex+"/layer.tar", 0o644, size)); err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	// A file that changed between the passes makes the layer differ from
	// its digest; tar.Writer refuses a size mismatch, and the digest is
	// checked again here.
	h := sha256.New()
	if err := l.write(io.MultiWriter(tw, h)); err != nil {
		return err
	}
	if hex.EncodeToString(h.Sum(nil)) != layerHex {
		return errors.New("a file of the layer changed while the image was written")
	}
	for _, f := range meta {
		if err := writeFile(tw, f.name, 0o644, f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finish archive: %w", err)
	}
	return nil
}

// layer is the image's only layer: parent directories (0755), /tmp (1777),
// then the files, each group sorted by path.
type layer struct {
	dirs  map[string]fs.FileMode
	files map[string]File
}

func newLayer(files []File) (*layer, error) {
	dirs := map[string]fs.FileMode{"tmp": 0o777 | fs.ModeSticky}
	byPath := map[string]File{}
	for _, f := range files {
		p, err := cleanPath(f.Path)
		if err != nil {
			return nil, err
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("file %s given twice", f.Path)
		}
		if f.Open != nil && f.Data != nil {
			return nil, fmt.Errorf("file %s has both Data and Open", f.Path)
		}
		byPath[p] = f
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := dirs[d]; !ok {
				dirs[d] = 0o755
			}
		}
	}
	for p := range byPath {
		if _, ok := dirs[p]; ok {
			return nil, fmt.Errorf("file %s is also a directory of the image", "/"+p)
		}
	}
	return &layer{dirs: dirs, files: byPath}, nil
}

// write writes the layer's tar to w.
func (l *layer) write(w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, d := range sortedKeys(l.dirs) {
		if err := tw.WriteHeader(dirHeader(d+"/", tarMode(l.dirs[d]))); err != nil {
			return fmt.Errorf("layer: directory /%s: %w", d, err)
		}
	}
	for _, p := range sortedKeys(l.files) {
		f := l.files[p]
		mode := f.Mode
		if mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) == 0 {
			mode = 0o644
		}
		var err error
		if f.Open != nil {
			err = copyFile(tw, p, tarMode(mode), f)
		} else {
			err = writeFile(tw, p, tarMode(mode), f.Data)
		}
		if err != nil {
			return fmt.Errorf("layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("layer: finish: %w", err)
	}
	return nil
}

// copyFile writes f's Size bytes from f.Open as entry name.
func copyFile(tw *tar.Writer, name string, mode int64, f File) error {
	r, err := f.Open()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	if err := tw.WriteHeader(fileHeader(name, mode, f.Size)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	n, err := io.Copy(tw, io.LimitReader(r, f.Size))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if n != f.Size {
		return fmt.Errorf("%s: read %d bytes, want %d (the file changed)", name, n, f.Size)
	}
	return nil
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// cleanPath turns an absolute image path into a tar entry name.
func cleanPath(p string) (string, error) {
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("file path %q is not absolute", p)
	}
	c := strings.TrimPrefix(path.Clean(p), "/")
	if c == "" {
		return "", fmt.Errorf("file path %q names the root directory", p)
	}
	return c, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// tarMode converts Go's file mode bits to the tar header's Unix mode.
func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}

func dirHeader(name string, mode int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch(), Format: tar.FormatPAX}
}

func fileHeader(name string, mode, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: size, ModTime: epoch(), Format: tar.FormatPAX}
}

func writeFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(fileHeader(name, mode, int64(len(data)))); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// The docker-archive format (`docker save`), as far as the engine's load
// needs it.
type (
	manifestEntry struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	imageConfig struct {
		Architecture string          `json:"architecture"`
		OS           string          `json:"os"`
		Created      time.Time       `json:"created"`
		Config       containerConfig `json:"config"`
		RootFS       rootFS          `json:"rootfs"`
		History      []history       `json:"history"`
	}
	containerConfig struct {
		Entrypoint []string          `json:"Entrypoint,omitempty"`
		Env        []string          `json:"Env,omitempty"`
		WorkingDir string            `json:"WorkingDir,omitempty"`
		OnBuild    []string          `json:"OnBuild,omitempty"`
		Labels     map[string]string `json:"Labels,omitempty"`
	}
	rootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	}
	history struct {
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by"`
	}
)
