package imageupdate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// Bounds of a scan: a source is a repository of manifests, not a disk.
const (
	maxFiles     = 10000
	maxDocuments = 1000
)

// Target is one image with a policy, where it is written.
type Target struct {
	Source string `json:"source"`
	// File is the file's path in the source ("apps/web.yaml").
	File string `json:"file"`
	// Pod and Container name it ("web", "app"); a Compose service is
	// the pod's project and service.
	Pod       string `json:"pod"`
	Container string `json:"container"`
	// Image is the image as written, variables not yet read.
	Image string `json:"image"`
	// Resolved is Image with its variables read (equal when none).
	Resolved string               `json:"resolved"`
	Policy   manifest.ImagePolicy `json:"policy"`
	// Line and Column are where the image's scalar starts (1-based).
	Line, Column int `json:"-"`
	// Var is the variable holding the tag ("" when the tag is
	// written out), and VarAt where it is set (a .env file, or the
	// expression's default in File).
	Var   string   `json:"var,omitempty"`
	VarAt *VarSite `json:"-"`
	// VarWithoutPolicy are the services of the project whose image names
	// Var too and that have no policy: Var does not move while there are
	// any.
	VarWithoutPolicy []string `json:"-"`
	// VarUses counts the places of the project that name Var (Compose
	// files and .env): more than the images with a policy that move
	// together, and Var does not move.
	VarUses int `json:"-"`
}

// VarSite is where a variable's value is written.
type VarSite struct {
	// File is the .env file's path in the source, or the target's own
	// file when the value is the expression's default.
	File    string
	Default bool
	Value   string
}

// Problem is a file or policy the scan could not read.
type Problem struct {
	File string `json:"file"`
	Msg  string `json:"error"`
}

func (p Problem) Error() string { return p.File + ": " + p.Msg }

// Scan finds every image with a policy in the source rooted at dir.
func Scan(source, dir string) ([]Target, []Problem, error) {
	var targets []Target
	var problems []Problem
	files := 0
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("source %s: %w", source, err)
	}
	defer root.Close()
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, Problem{File: p, Msg: err.Error()})
			return nil
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		ext := path.Ext(p)
		if !d.Type().IsRegular() || (ext != ".yaml" && ext != ".yml") {
			return nil
		}
		if files++; files > maxFiles {
			return fmt.Errorf("more than %d manifest files", maxFiles)
		}
		ts, err := scanFile(root, source, p)
		if err != nil {
			problems = append(problems, Problem{File: p, Msg: err.Error()})
		}
		targets = append(targets, ts...)
		return nil
	})
	if err != nil {
		return targets, problems, fmt.Errorf("source %s: %w", source, err)
	}
	return targets, problems, nil
}

// readFile reads a source's file, bounded.
func readFile(root *os.Root, p string) ([]byte, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return manifest.ReadLimited(f, manifest.MaxSize)
}

func scanFile(root *os.Root, source, p string) ([]Target, error) {
	data, err := readFile(root, p)
	if err != nil {
		return nil, err
	}
	if slices.Contains(project.ProjectFiles, path.Base(p)) {
		return scanCompose(root, source, p, data)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []Target
	for i := 0; ; i++ {
		if i == maxDocuments {
			return out, fmt.Errorf("more than %d documents", maxDocuments)
		}
		var doc yaml.Node
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			// Not this package's to judge: validate says what is wrong.
			return out, nil
		}
		out = append(out, nativeTargets(source, p, &doc)...)
	}
}

// nativeTargets are the containers (init containers too) with an
// imagePolicy of one native manifest document.
func nativeTargets(source, file string, doc *yaml.Node) []Target {
	m := mapping(doc)
	if m == nil || lookup(m, "containers") == nil {
		return nil
	}
	id := scalar(lookup(m, "id"))
	var out []Target
	for _, key := range []string{"containers", "initContainers"} {
		cs := lookup(m, key)
		if cs == nil || cs.Kind != yaml.SequenceNode {
			continue
		}
		for _, c := range cs.Content {
			if c.Kind != yaml.MappingNode {
				continue
			}
			pol, img := lookup(c, "imagePolicy"), lookup(c, "image")
			if pol == nil || img == nil || img.Kind != yaml.ScalarNode {
				continue
			}
			var p manifest.ImagePolicy
			if err := pol.Decode(&p); err != nil {
				continue
			}
			out = append(out, Target{Source: source, File: file, Pod: id, Container: scalar(lookup(c, "name")),
				Image: img.Value, Resolved: img.Value, Policy: p, Line: img.Line, Column: img.Column})
		}
	}
	return out
}

// mapping is the document's top mapping, nil when it has none.
func mapping(doc *yaml.Node) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	return n
}

// lookup is the value of key in mapping m, nil when absent.
func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// relJoin joins a project folder and a file in it, as a source path.
func relJoin(dir, name string) string {
	return filepath.ToSlash(path.Join(dir, name))
}
