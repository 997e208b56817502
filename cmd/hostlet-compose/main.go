// Command hostlet-compose renders one Docker Compose project into hostlet
// pods, or translates the Kubernetes objects of one source: it reads a
// bundle (manifest/project.Bundle, JSON) on stdin and writes the pods and
// errors (project.Response, JSON) on stdout. It reads no file, no network
// and no environment of its own; hostlet runs it for every project, and
// every source's set of Kubernetes objects, whose files or settings
// changed, so that compose-go, its schema compiler and the Kubernetes
// types stay out of the agent's memory.
//
// Exit status: 0 with an answer (a project with errors included), 1 when
// the input is not a bundle.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/manifest/kube"
	"github.com/hostlet/hostlet/manifest/project"
)

// maxInput bounds the bundle read: the project's files and their names.
const maxInput = 2*project.MaxBytes + 1<<20

func main() {
	if err := run(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hostlet-compose:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, in io.Reader, out io.Writer) error {
	data, err := manifest.ReadLimited(in, maxInput)
	if err != nil {
		return fmt.Errorf("read the bundle: %w", err)
	}
	var b project.Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return fmt.Errorf("the input is not a project bundle: %w", err)
	}
	if len(b.Kube) > 0 {
		pods, errs := kube.Translate(b.Kube)
		return json.NewEncoder(out).Encode(project.Response{Manifests: pods, Errors: errs})
	}
	return json.NewEncoder(out).Encode(compose.Render(ctx, b))
}
