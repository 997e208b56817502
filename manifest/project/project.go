package project

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/manifest"
)

// ProjectFiles are the names of a project's Compose file, as Compose looks
// for them. A folder holding one of them is a project.
var ProjectFiles = []string{"compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"}

// OverrideFiles are the names of the override file merged over it.
var OverrideFiles = []string{"compose.override.yaml", "compose.override.yml", "docker-compose.override.yaml", "docker-compose.override.yml"}

// Bounds of one project's bundle: every file below its folder is its data.
const (
	MaxFiles = 2000
	MaxBytes = 4 * manifest.MaxSize
)

// IsProjectFile reports whether a file name (no folder) is a project's
// Compose file.
func IsProjectFile(name string) bool {
	for _, n := range ProjectFiles {
		if name == n {
			return true
		}
	}
	return false
}

// ComposeName reports whether a file name (no folder) is a Compose file's
// by its name, a name of its own included: it holds "compose" and ends in
// .yaml or .yml, in any letter case (docker-compose.prod.yml,
// compose.dev.yaml). Only such a name, named as a source path, is read
// as a Compose file by its content: a manifest named app.yaml stays one,
// whatever its author puts in it, and never makes its folder a project
// (whose every file its services could mount).
func ComposeName(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "compose") && (strings.HasSuffix(l, ".yaml") || strings.HasSuffix(l, ".yml"))
}

// LooksLikeCompose reports whether a single body (an HTTP response, an etcd
// value) is a Compose file rather than native manifests: a YAML mapping
// with a top-level services key and neither version v1beta1 nor id.
func LooksLikeCompose(data []byte) bool {
	if !bytes.Contains(data, []byte("services")) {
		return false
	}
	var top map[string]any
	if err := yaml3.Unmarshal(data, &top); err != nil || top == nil {
		return false
	}
	_, services := top["services"]
	_, id := top["id"]
	return services && !id && top["version"] != manifest.Version
}

// Host are the host config's Compose settings (its compose block).
type Host struct {
	// Env is compose.env: per-host values that win over the project's
	// .env.
	Env map[string]string `json:"env,omitempty"`
	// Profiles is compose.profiles: the active profiles.
	Profiles []string `json:"profiles,omitempty"`
	// Home is the folder a bind source's ~ stands for (compose.home, else
	// the home of the user hostlet runs as); "": ~ is refused, naming
	// compose.home.
	Home string `json:"home,omitempty"`
	// HomeIsGuess: Home is the home of the user running a command away
	// from the host's hostlet (validate, diff), not compose.home: each ~
	// expanded says so in a note.
	HomeIsGuess bool `json:"homeIsGuess,omitempty"`
}

// Options are the host's settings and the project's place in its source.
type Options struct {
	// Source is the source's name; Dir the project folder as origins name
	// it ("apps/web"; for a project delivered as one body, the etcd key or
	// "").
	Source string `json:"source"`
	Dir    string `json:"dir,omitempty"`
	// Name is the project name when the Compose file sets none (the
	// folder's name); it is normalised as Compose does.
	Name string `json:"name,omitempty"`
	// File is the project's Compose file when a source path names it by
	// a name of its own (docker-compose.prod.yml, as `docker compose -f`
	// takes it): no other Compose file and no override is read. Empty:
	// the folder's one of ProjectFiles, with its override.
	File string `json:"file,omitempty"`
	Host
}

// File is one file of a project: its content, or why it may not be read
// (a link leaving the source, a file over the size limit), which is the
// error of whoever asks for it.
type File struct {
	Data []byte `json:"data,omitempty"`
	Err  string `json:"err,omitempty"`
	// Exec: the file is executable in its source (a mode with an x bit,
	// git's 100755).
	Exec bool `json:"exec,omitempty"`
}

// Bundle is a project as the helper renders it: every file below its
// folder by slash-separated name, or one body.
type Bundle struct {
	Options Options `json:"options"`
	// Body is a project delivered as one body (HTTP, etcd): no files
	// beside it.
	Body  []byte          `json:"body,omitempty"`
	Files map[string]File `json:"files,omitempty"`
	// Kube are the Kubernetes objects of a source (Options.Source), to
	// translate into pods together (package manifest/kube): a bundle
	// holds them or a project, never both.
	Kube []manifest.Sourced `json:"kube,omitempty"`
}

// ReadFile reads a file of the bundle; one that is not there wraps
// fs.ErrNotExist.
func (b *Bundle) ReadFile(name string) ([]byte, error) {
	f, ok := b.Files[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
	case f.Err != "":
		return nil, fmt.Errorf("%s", f.Err)
	}
	return f.Data, nil
}

// Names are the bundle's file names, sorted.
func (b *Bundle) Names() []string {
	return slices.Sorted(maps.Keys(b.Files))
}

// Executable reports whether a file of the bundle is executable.
func (b *Bundle) Executable(name string) bool {
	return b.Files[name].Exec
}

// SetExecutable marks a file of the bundle executable.
func (b *Bundle) SetExecutable(name string) {
	if f, ok := b.Files[name]; ok {
		f.Exec = true
		b.Files[name] = f
	}
}

// Add puts a file into the bundle, or the reason it was not read; it
// fails once the bundle is over its bounds.
func (b *Bundle) Add(name string, data []byte, readErr error) error {
	if b.Files == nil {
		b.Files = map[string]File{}
	}
	if len(b.Files) >= MaxFiles {
		return fmt.Errorf("more than %d files below the project folder", MaxFiles)
	}
	if readErr != nil {
		b.Files[name] = File{Err: readErr.Error()}
		return nil
	}
	if b.size()+len(data) > MaxBytes {
		return fmt.Errorf("the files below the project folder hold more than %d bytes: %w", MaxBytes, manifest.ErrTooLarge)
	}
	b.Files[name] = File{Data: data}
	return nil
}

func (b *Bundle) size() int {
	n := 0
	for _, f := range b.Files {
		n += len(f.Data)
	}
	return n
}

// Response is what the helper answers: the pods (each with the problems
// of its service) and the problems of the project as a whole.
type Response struct {
	Manifests []manifest.Sourced `json:"manifests"`
	Errors    []*manifest.Error  `json:"errors,omitempty"`
}
