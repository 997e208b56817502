// Command hostletimage builds hostlet's own image (`make image`) from the
// five binaries `make build` writes and the host's CA bundle, with no
// registry and no `docker build` (internal/imagetar, as the test images
// are made), and loads it into the local engine: /usr/bin/hostlet (the
// entrypoint), /usr/bin/hostlet-compose, /usr/bin/hostlet-notify,
// /usr/bin/hostlet-images (for CI jobs that run `hostlet images`) and
// /usr/bin/hostlet-sops beside it, /etc/ssl/certs/ca-certificates.crt for
// git and HTTP sources over TLS.
// docs/install.md gives the `docker run` line.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hostlet/hostlet/internal/imagetar"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// caBundle is where Debian keeps the CA bundle, and where Go's crypto/x509
// looks first.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

func main() {
	tag := flag.String("tag", "hostlet:dev", "image reference to load hostlet's image as")
	bin := flag.String("bin", "bin", "folder holding hostlet, hostlet-compose, hostlet-notify, hostlet-images and hostlet-sops")
	ca := flag.String("ca", caBundle, "CA bundle to put at "+caBundle)
	flag.Parse()
	if err := run(context.Background(), *tag, *bin, *ca); err != nil {
		fmt.Fprintln(os.Stderr, "hostletimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tag, bin, ca string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := hruntime.New(ctx, os.Getenv("DOCKER_HOST"), "hostletimage", log)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := load(ctx, rt, tag, bin, ca); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "hostletimage: loaded %s\n", tag)
	return nil
}

// imageLoader is what load needs of the engine.
type imageLoader interface {
	LoadImage(ctx context.Context, tar io.Reader) error
}

// load writes the image tagged tag from the binaries in bin and the CA
// bundle ca, and loads it through rt.
func load(ctx context.Context, rt imageLoader, tag, bin, ca string) error {
	files := make([]imagetar.File, 0, 5)
	for _, name := range []string{"hostlet", "hostlet-compose", "hostlet-notify", "hostlet-images", "hostlet-sops"} {
		f, err := imagetar.FromDisk(filepath.Join(bin, name), "/usr/bin/"+name, 0o755)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	f, err := imagetar.FromDisk(ca, caBundle, 0o644)
	if err != nil {
		return err
	}
	files = append(files, f)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(imagetar.WriteConfig(pw, tag, files, imagetar.Config{
			Entrypoint: []string{"/usr/bin/hostlet"},
			Labels: map[string]string{
				"org.opencontainers.image.title":  "hostlet",
				"org.opencontainers.image.source": "https://github.com/hostlet/hostlet",
			},
		}))
	}()
	err = rt.LoadImage(ctx, pr)
	pr.CloseWithError(io.ErrClosedPipe) // unblock the writer if the load stopped early
	if err != nil {
		return fmt.Errorf("load image %s: %w", tag, err)
	}
	return nil
}
