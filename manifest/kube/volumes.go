package kube

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hostlet/hostlet/manifest"
)

// podVolume is one volume of the pod as its containers' mounts see it.
type podVolume struct {
	field    string // spec.volumes[i]
	index    int    // in the manifest's volumes; -1 for a memory emptyDir
	kind     string // hostPath, emptyDir, persistentVolumeClaim, files
	files    *manifest.Files
	hostPath string
	readOnly bool
	memory   int64 // a memory emptyDir's size limit in bytes (0: none)
	mounted  int   // mounts of a memory emptyDir so far
}

// podVolumes translates the pod's volumes, returning them by name.
func (p *podTranslation) podVolumes(m *manifest.Manifest, vs []corev1.Volume) map[string]*podVolume {
	out := map[string]*podVolume{}
	for i := range vs {
		v := &vs[i]
		f := fmt.Sprintf("spec.volumes[%d]", i)
		if _, dup := out[v.Name]; dup {
			p.errorf(f+".name", "a second volume %q", v.Name)
			continue
		}
		pv := &podVolume{field: f, index: len(m.Volumes)}
		mv := manifest.Volume{Name: v.Name}
		switch {
		case v.HostPath != nil:
			pv.kind, pv.hostPath, mv.HostPath = "hostPath", v.HostPath.Path, v.HostPath.Path
			p.hostPathType(f+".hostPath.type", v.HostPath.Type)
		case v.EmptyDir != nil:
			if !p.emptyDir(f, v.EmptyDir, pv) {
				out[v.Name] = pv
				continue
			}
		case v.PersistentVolumeClaim != nil:
			pv.kind, pv.readOnly = "persistentVolumeClaim", v.PersistentVolumeClaim.ReadOnly
			mv.DockerVolume = p.claim(f+".persistentVolumeClaim.claimName", v.PersistentVolumeClaim.ClaimName)
		case v.ConfigMap != nil, v.Secret != nil, v.Projected != nil, v.DownwardAPI != nil:
			pv.kind = "files"
			pv.files = p.sharedFilesOf(f, &v.VolumeSource)
			if len(pv.files.Items) > 0 {
				mv.Files = pv.files
			} // else: an optional ConfigMap or Secret that is not there, an empty folder (mounted read-only)
		case v.VolumeSource == (corev1.VolumeSource{}):
			// The API server makes a volume without a source an emptyDir.
			pv.kind = "emptyDir"
		default:
			// Another source: refused by the field walk.
			pv.kind = "unsupported"
		}
		out[v.Name] = pv
		p.nameField(fmt.Sprintf("volumes[%d]", len(m.Volumes)), f)
		m.Volumes = append(m.Volumes, mv)
	}
	return out
}

// emptyDir reads an emptyDir: a pod's empty folder (true: a volume of
// the pod), or with medium Memory a tmpfs of the container mounting it
// (false).
func (p *podTranslation) emptyDir(f string, e *corev1.EmptyDirVolumeSource, pv *podVolume) bool {
	pv.kind = "emptyDir"
	switch e.Medium {
	case corev1.StorageMediumDefault:
		if e.SizeLimit != nil {
			p.note(f+".emptyDir.sizeLimit", "not enforced on a folder of the host's disk (it is with medium Memory)")
		}
		return true
	case corev1.StorageMediumMemory:
		pv.index = -1
		if e.SizeLimit != nil {
			pv.memory = e.SizeLimit.Value()
		}
		return false
	}
	p.errorf(f+".emptyDir.medium", "%q: not supported by hostlet (Memory is)", e.Medium)
	return true
}

// claim is the Docker volume of a PersistentVolumeClaim of the pod's
// namespace in the source.
func (p *podTranslation) claim(field, name string) string {
	o, ok := p.data[dataKey{"PersistentVolumeClaim", p.namespace, name}]
	if !ok {
		p.errorf(field, "PersistentVolumeClaim %q is not in namespace %s of this source", name, p.namespace)
		return ""
	}
	pvc := o.value.(*corev1.PersistentVolumeClaim)
	if m := pvc.Spec.VolumeMode; m != nil && *m != corev1.PersistentVolumeFilesystem {
		p.errorf(field, "PersistentVolumeClaim %q has volumeMode %s: only Filesystem is supported on a single host", name, *m)
	}
	return PodID(p.namespace, name, 0)
}

// filesOf makes the files of a configMap, secret, projected or
// downwardAPI volume.
func (p *podTranslation) filesOf(f string, v *corev1.VolumeSource) *manifest.Files {
	var items []manifest.FileItem
	secret := false
	var sourceName string
	switch {
	case v.ConfigMap != nil:
		c := v.ConfigMap
		sourceName = "configmap " + c.Name
		items = p.keyItems(f+".configMap", "name", "ConfigMap", c.Name, c.Items, c.Optional, c.DefaultMode)
	case v.Secret != nil:
		s := v.Secret
		sourceName, secret = "secret "+s.SecretName, true
		items = p.keyItems(f+".secret", "secretName", "Secret", s.SecretName, s.Items, s.Optional, s.DefaultMode)
	case v.DownwardAPI != nil:
		sourceName = "downwardAPI"
		items = p.downwardItems(f+".downwardAPI", v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
	case v.Projected != nil:
		sourceName = "projected"
		for i, s := range v.Projected.Sources {
			sf := fmt.Sprintf("%s.projected.sources[%d]", f, i)
			switch {
			case s.ConfigMap != nil:
				items = append(items, p.keyItems(sf+".configMap", "name", "ConfigMap", s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, v.Projected.DefaultMode)...)
			case s.Secret != nil:
				secret = true
				items = append(items, p.keyItems(sf+".secret", "name", "Secret", s.Secret.Name, s.Secret.Items, s.Secret.Optional, v.Projected.DefaultMode)...)
			case s.DownwardAPI != nil:
				items = append(items, p.downwardItems(sf+".downwardAPI", s.DownwardAPI.Items, v.Projected.DefaultMode)...)
			}
		}
	}
	p.checkItemPaths(f, items)
	return manifest.NewFiles(sourceName, secret, items)
}

// keyItems are the files of a ConfigMap or Secret (named at f's field
// nameKey): every key at its name, or the items asked for at their paths.
func (p *podTranslation) keyItems(f, nameKey, kind, name string, keys []corev1.KeyToPath, optional *bool, defaultMode *int32) []manifest.FileItem {
	// The keys of a Secret encrypted in place are their ciphertext here
	// (a data value as a base64 part of it): a file or git source's
	// reader marks them for the host to decrypt (checkSealed refuses any
	// other encrypted content).
	data := p.lookup(f+"."+nameKey, kind, name, optional)
	mode := modeOf(defaultMode)
	var items []manifest.FileItem
	if len(keys) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			items = append(items, manifest.FileItem{Path: k, Data: data[k], Mode: mode})
		}
		return items
	}
	for i, k := range keys {
		b, ok := data[k.Key]
		if !ok {
			if data != nil && !isTrue(optional) {
				p.errorf(fmt.Sprintf("%s.items[%d].key", f, i), "%s %q has no key %q", kind, name, k.Key)
			}
			continue
		}
		m := mode
		if k.Mode != nil {
			m = modeOf(k.Mode)
		}
		items = append(items, manifest.FileItem{Path: k.Path, Data: b, Mode: m})
	}
	return items
}

// downwardItems are the files of a downwardAPI volume.
func (p *podTranslation) downwardItems(f string, files []corev1.DownwardAPIVolumeFile, defaultMode *int32) []manifest.FileItem {
	var items []manifest.FileItem
	for i, d := range files {
		df := fmt.Sprintf("%s.items[%d]", f, i)
		var value string
		switch {
		case d.FieldRef != nil && d.FieldRef.FieldPath == "metadata.labels":
			value = mapFile(p.labels)
		case d.FieldRef != nil && d.FieldRef.FieldPath == "metadata.annotations":
			value = mapFile(p.annots)
		case d.FieldRef != nil:
			var ok bool
			if value, ok = p.fieldRef(df+".fieldRef.fieldPath", d.FieldRef.FieldPath); !ok {
				continue
			}
		case d.ResourceFieldRef != nil && d.ResourceFieldRef.ContainerName == "":
			p.errorf(df+".resourceFieldRef.containerName", "required in a volume")
			continue
		case d.ResourceFieldRef != nil:
			var ok bool
			if value, ok = p.resourceRef(df+".resourceFieldRef", nil, d.ResourceFieldRef); !ok {
				continue
			}
		default:
			p.errorf(df, "set fieldRef or resourceFieldRef")
			continue
		}
		m := modeOf(defaultMode)
		if d.Mode != nil {
			m = modeOf(d.Mode)
		}
		items = append(items, manifest.FileItem{Path: d.Path, Data: []byte(value), Mode: m})
	}
	return items
}

// mapFile is a map as the downward API writes it: key="value" lines,
// sorted.
func mapFile(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

func modeOf(m *int32) uint32 {
	if m == nil {
		return 0
	}
	return uint32(*m) & 0o7777
}

// checkItemPaths checks the paths of a volume's files: relative, clean,
// each once.
func (p *podTranslation) checkItemPaths(f string, items []manifest.FileItem) {
	seen := map[string]bool{}
	for _, it := range items {
		switch {
		case strings.ContainsFunc(it.Path, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			p.errorf(f, "%q holds a control character", it.Path)
		case it.Path == "" || path.IsAbs(it.Path) || path.Clean(it.Path) != it.Path || it.Path == ".." || strings.HasPrefix(it.Path, "../"):
			p.errorf(f, "%q is not a clean relative path inside the volume", it.Path)
		case seen[it.Path]:
			p.errorf(f, "%q is written twice", it.Path)
		}
		seen[it.Path] = true
	}
}

// mounts translates a container's volume mounts.
func (p *podTranslation) mounts(m *manifest.Manifest, c *manifest.Container, field string, vms []corev1.VolumeMount) {
	for i, vm := range vms {
		f := fmt.Sprintf("%s.volumeMounts[%d]", field, i)
		pv, ok := p.volumes[vm.Name]
		if !ok {
			p.errorf(f+".name", "no volume %q in spec.volumes", vm.Name)
			continue
		}
		if pv.index < 0 {
			p.memoryMount(c, f, vm, pv)
			continue
		}
		name := vm.Name
		if vm.SubPath != "" {
			name = p.subPathVolume(m, f+".subPath", pv, vm.Name, vm.SubPath)
		}
		// Files (a ConfigMap, a Secret, the downward API) are mounted
		// read-only, as in Kubernetes.
		readOnly := vm.ReadOnly || pv.readOnly || pv.kind == "files"
		c.VolumeMounts = append(c.VolumeMounts, manifest.VolumeMount{Name: name, MountPath: vm.MountPath, ReadOnly: readOnly})
	}
}

// memoryMount mounts a memory emptyDir as the container's tmpfs: one
// container may mount it (a tmpfs is not shared).
func (p *podTranslation) memoryMount(c *manifest.Container, f string, vm corev1.VolumeMount, pv *podVolume) {
	pv.mounted++
	switch {
	case pv.mounted > 1:
		p.errorf(f+".name", "emptyDir %q with medium Memory is mounted a second time: not supported by hostlet yet (a tmpfs is one container's)", vm.Name)
	case vm.SubPath != "":
		p.errorf(f+".subPath", "a subPath of an emptyDir with medium Memory: not supported by hostlet yet")
	case vm.ReadOnly:
		p.errorf(f+".readOnly", "a read-only emptyDir with medium Memory is always empty")
	case path.Clean(vm.MountPath) == "/dev/shm":
		// The usual way to give a container a larger /dev/shm.
		c.ShmSize = pv.memory
		if pv.memory == 0 {
			p.note(f, "an emptyDir with medium Memory at /dev/shm without sizeLimit is the engine's /dev/shm of 64 MiB: set sizeLimit for more")
		}
	default:
		// containers[i].tmpfs[j] is the object's volume mount.
		container, _, _ := strings.Cut(strings.TrimPrefix(f, "spec."), ".volumeMounts")
		p.nameField(fmt.Sprintf("%s.tmpfs[%d]", container, len(c.Tmpfs)), f)
		c.Tmpfs = append(c.Tmpfs, manifest.Tmpfs{MountPath: vm.MountPath, SizeBytes: pv.memory, Exec: true})
	}
}

// memoryVolumes notes memory emptyDirs no container mounts, and, in a
// pod with an fsGroup, that those mounted keep root's group.
func (p *podTranslation) memoryVolumes(spec *corev1.PodSpec, fsGroup bool) {
	for _, v := range spec.Volumes {
		pv := p.volumes[v.Name]
		switch {
		case pv == nil || pv.index >= 0:
		case pv.mounted == 0:
			p.note(pv.field, "emptyDir with medium Memory mounted by no container: nothing to do")
		case fsGroup:
			p.note(pv.field+".emptyDir.medium", "Memory with fsGroup: the tmpfs is not given to the group (the engine's tmpfs takes no group); it is mode 1777, writable by every user of the pod, and what they make there has their own group")
		}
	}
}

// subPathVolume makes the volume a subPath mount of pv mounts: a file or
// folder of a files volume, a folder below a host path; it returns the
// new volume's name.
func (p *podTranslation) subPathVolume(m *manifest.Manifest, f string, pv *podVolume, name, sub string) string {
	if path.IsAbs(sub) || path.Clean(sub) != sub || sub == ".." || strings.HasPrefix(sub, "../") {
		p.errorf(f, "%q is not a clean relative path inside the volume", sub)
		return name
	}
	v := manifest.Volume{Name: p.newVolumeName(m, name)}
	switch pv.kind {
	case "hostPath":
		v.HostPath = path.Join(pv.hostPath, sub)
	case "files":
		v.Files = subFiles(pv.files, sub)
		if v.Files == nil {
			p.errorf(f, "%q is not a file or folder of volume %q", sub, name)
			return name
		}
	default:
		p.errorf(f, "a subPath of a %s volume: not supported by hostlet yet", pv.kind)
		return name
	}
	p.nameField(fmt.Sprintf("volumes[%d]", len(m.Volumes)), f)
	m.Volumes = append(m.Volumes, v)
	return v.Name
}

// subFiles are the files of f at sub: one file, or a folder's (nil: none).
func subFiles(f *manifest.Files, sub string) *manifest.Files {
	var items []manifest.FileItem
	for _, it := range f.Items {
		switch {
		case it.Path == sub:
			return manifest.NewFiles(f.Source+"/"+sub, f.Secret, []manifest.FileItem{{Data: it.Data, Mode: it.Mode}})
		case strings.HasPrefix(it.Path, sub+"/"):
			it.Path = strings.TrimPrefix(it.Path, sub+"/")
			items = append(items, it)
		}
	}
	if items == nil {
		return nil
	}
	return manifest.NewFiles(f.Source+"/"+sub, f.Secret, items)
}

// newVolumeName is a volume name made from name that the pod does not
// use yet: name-sub<n>, n counting the pod's subPath volumes (a name
// taken moves n on; each is tried once).
func (p *podTranslation) newVolumeName(m *manifest.Manifest, name string) string {
	base := name
	if len(base) > 50 {
		base = strings.TrimRight(base[:50], "-")
	}
	if p.taken == nil {
		p.taken = map[string]bool{}
		for n := range p.volumes {
			p.taken[n] = true
		}
		for _, v := range m.Volumes {
			p.taken[v.Name] = true
		}
	}
	for {
		p.subPaths++
		n := fmt.Sprintf("%s-sub%d", base, p.subPaths)
		if !p.taken[n] {
			p.taken[n] = true
			return n
		}
	}
}

// hostPathType notes what a hostPath volume's type does here: nothing is
// created and no type is checked; the engine fails a path that is not
// there.
func (p *podTranslation) hostPathType(field string, t *corev1.HostPathType) {
	switch {
	case t == nil || *t == corev1.HostPathUnset:
	case *t == corev1.HostPathDirectoryOrCreate || *t == corev1.HostPathFileOrCreate:
		p.note(field, "%s: hostlet creates nothing on the host; the engine fails a path that is not there", *t)
	default:
		p.note(field, "%s is not checked: the engine mounts whatever is at the path, and fails one that is not there", *t)
	}
}
