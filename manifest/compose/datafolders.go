package compose

import (
	"path"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"

	"github.com/hostlet/hostlet/manifest"
)

// placeholders are the files that keep an otherwise empty folder in git:
// a folder holding nothing else is a data folder, not project files.
var placeholders = []string{".gitkeep", ".keep", ".gitignore"}

// dataFolder returns the data folder that the relative bind v (key
// volumes[i]) becomes when the project does not hold its source (or holds
// only placeholders there), and whether it does. What the project holds
// is mounted from the project (read-only, as it is at the revision); what
// it does not is a folder the service writes, kept on the host, as Docker
// makes a missing bind source a folder. A project delivered as one body
// has no files to tell them apart: its relative binds stay errors.
func (c *serviceConv) dataFolder(key string, v types.ServiceVolumeConfig) (manifest.Volume, bool) {
	name, err := projectPath(v.Source)
	if err != nil || name == "." {
		return manifest.Volume{}, false
	}
	if _, body := c.t.files.(noFiles); body || c.t.holds(name) {
		return manifest.Volume{}, false
	}
	if v.Bind == nil || !v.Bind.CreateHostPath {
		c.add(key+".source", "%s is not a file or folder of the project at this revision, and bind.create_host_path is not set (Compose refuses it too): set it for a data folder kept on the host", v.Source)
		return manifest.Volume{}, true
	}
	if path.Ext(name) != "" {
		c.note(key+".source", "%s is not in the project: a folder is made there on the host (as Docker makes a missing bind source), not a file; add the file to the project if the service reads one", v.Source)
	}
	return manifest.Volume{DataFolder: c.t.project.Name + "/" + name}, true
}

// holds reports whether the project holds name: a file, or a folder with
// a file below it other than placeholders.
func (t *translator) holds(name string) bool {
	names := t.files.Names()
	if _, found := slices.BinarySearch(names, name); found {
		return true
	}
	prefix := name + "/"
	for _, n := range names {
		if strings.HasPrefix(n, prefix) && !slices.Contains(placeholders, path.Base(n)) {
			return true
		}
	}
	return false
}
