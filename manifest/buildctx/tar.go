package buildctx

import (
	"archive/tar"
	"cmp"
	"fmt"
	"io"
	"path"
	"time"

	"github.com/hostlet/hostlet/manifest"
)

// inlineName is the Dockerfile's name in the tar when it is not a file of
// the context as sent (given inline, or excluded by .dockerignore); a
// .dockerignore naming it keeps it out of the image's COPY.
const inlineName = ".hostlet.Dockerfile"

// epoch is every file's modification time in the tar, so the engine's
// build cache sees only content and modes.
var epoch = time.Unix(0, 0).UTC()

// RecipeName is the Dockerfile's name in the tar of b: its own name when
// it is a file of the context as sent, else (given inline, excluded by
// .dockerignore, or sent without its cache mounts) inlineName.
func RecipeName(b *manifest.Build) string {
	if b.DockerfileInline == "" && b.Files != nil {
		name := path.Clean(cmp.Or(b.Dockerfile, DefaultDockerfile))
		for _, it := range b.Files.Items {
			if it.Path == name && string(it.Data) == b.Recipe {
				return name
			}
		}
	}
	return inlineName
}

// WriteTar writes the context of a resolved build to w as the engine's
// build endpoint reads it, and returns the Dockerfile's name in it. Files
// are owned by root with mode 0644 (0755 when executable) and one
// modification time.
func WriteTar(w io.Writer, b *manifest.Build) (string, error) {
	if b.Files == nil {
		return "", fmt.Errorf("build of context %s: not resolved", b.Context)
	}
	tw := tar.NewWriter(w)
	name := RecipeName(b)
	for _, it := range b.Files.Items {
		if name == inlineName && it.Path == ignoreFile {
			// Replaced by the one keeping the Dockerfile out.
			continue
		}
		if err := writeFile(tw, it.Path, it.Data, it.Mode&0o111 != 0); err != nil {
			return "", err
		}
	}
	if name == inlineName {
		if err := writeFile(tw, inlineName, []byte(b.Recipe), false); err != nil {
			return "", err
		}
		if err := writeFile(tw, ignoreFile, []byte(inlineName+"\n"+ignoreFile+"\n"), false); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("build context tar: %w", err)
	}
	return name, nil
}

func writeFile(tw *tar.Writer, name string, data []byte, exec bool) error {
	mode := int64(0o644)
	if exec {
		mode = 0o755
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch, Format: tar.FormatPAX}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("build context tar: %s: %w", name, err)
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("build context tar: %s: %w", name, err)
	}
	return nil
}
