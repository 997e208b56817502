package kube

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/hostlet/hostlet/manifest"
)

// shared are the data and files of one source's objects, made once and
// shared by every pod that uses them: a ConfigMap of 10 MiB mounted by
// 100 replicas is 10 MiB, not 1 GiB.
type shared struct {
	data    map[dataKey]sharedData
	volumes map[string]sharedFiles
}

type sharedFiles struct {
	files *manifest.Files
	errs  []*manifest.Error
}

type sharedData struct {
	data map[string][]byte
	err  error
}

func newShared() *shared {
	return &shared{data: map[dataKey]sharedData{}, volumes: map[string]sharedFiles{}}
}

// dataOf is dataOf(o), made once per object.
func (s *shared) dataOf(o object) (map[string][]byte, error) {
	meta := objectMeta(o.value)
	key := dataKey{o.kube.Kind, namespaceOf(meta), meta.Name}
	if d, ok := s.data[key]; ok {
		return d.data, d.err
	}
	data, err := dataOf(o)
	s.data[key] = sharedData{data, err}
	return data, err
}

// filesOf is p.filesOf(f, v), made once per distinct source in the
// pod's namespace and shared, with the errors it found; a source reading
// the downward API is the pod's own and made each time.
func (p *podTranslation) sharedFilesOf(f string, v *corev1.VolumeSource) *manifest.Files {
	if readsPod(v) {
		return p.filesOf(f, v)
	}
	spec, err := json.Marshal(v)
	if err != nil {
		return p.filesOf(f, v)
	}
	key := p.namespace + "\x00" + f + "\x00" + string(spec)
	if kept, ok := p.shared.volumes[key]; ok {
		p.errs = append(p.errs, kept.errs...)
		return kept.files
	}
	n := len(p.errs)
	files := p.filesOf(f, v)
	p.shared.volumes[key] = sharedFiles{files: files, errs: slices.Clone(p.errs[n:])}
	return files
}

// readsPod reports whether v holds anything of the pod itself (the
// downward API).
func readsPod(v *corev1.VolumeSource) bool {
	if v.DownwardAPI != nil {
		return true
	}
	if v.Projected != nil {
		for _, s := range v.Projected.Sources {
			if s.DownwardAPI != nil {
				return true
			}
		}
	}
	return false
}
