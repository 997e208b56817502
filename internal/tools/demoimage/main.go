// Command demoimage builds the demo HTTP server (examples/demo) as a static
// binary and loads it into the local Docker engine as an image, with no
// registry and no `docker build`. `make run` uses it for the quickstart.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/hostlet/hostlet/internal/imagetar"
	hruntime "github.com/hostlet/hostlet/runtime"
)

func main() {
	tag := flag.String("tag", "hostlet-demo:v1", "image reference to load the demo server as")
	flag.Parse()
	if err := run(context.Background(), *tag); err != nil {
		fmt.Fprintln(os.Stderr, "demoimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tag string) error {
	dir, err := os.MkdirTemp("", "hostlet-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "demo")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./examples/demo")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build examples/demo: %w", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := imagetar.Write(&buf, tag, []imagetar.File{{Path: "/demo", Mode: 0o755, Data: data}}, []string{"/demo"}, nil); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := hruntime.New(ctx, os.Getenv("DOCKER_HOST"), "demoimage", log)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := rt.LoadImage(ctx, &buf); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "demoimage: loaded %s (%d bytes binary)\n", tag, len(data))
	return nil
}
