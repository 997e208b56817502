package kube

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hostlet/hostlet/manifest"
)

// dataKey names a ConfigMap, Secret or PersistentVolumeClaim of the
// source.
type dataKey struct{ kind, namespace, name string }

// source is one translation: the source's objects, its data objects by
// key, and what it found.
type source struct {
	objects []object
	data    map[dataKey]object
	errs    []*manifest.Error
	// shared are what the pods of the source share rather than copy
	// (each replica of a Deployment mounts the same files).
	shared *shared
	// volumes are the claims by the name of their Docker volume.
	volumes map[string]dataKey
	// sealed are the encrypted values of the source's encrypted Secrets:
	// a data value as the base64 part dataOf makes of it, a stringData
	// value as it is (checkSealed).
	sealed map[string]bool
}

// Translate translates the Kubernetes objects of one source (ms, each
// with Kube set; others are left out) into pods, in the order of the
// objects. Errors name the file, the object (a workload by its pod id)
// and the field; a workload with an error gives no pod.
func Translate(ms []manifest.Sourced) ([]manifest.Sourced, []*manifest.Error) {
	s := &source{data: map[dataKey]object{}, shared: newShared(), volumes: map[string]dataKey{}}
	for _, m := range ms {
		if m.Kube == nil {
			continue
		}
		v, sealed, errs := decode(m.Origin, m.Kube)
		if v == nil {
			s.errs = append(s.errs, errs...)
			continue
		}
		s.add(object{origin: m.Origin, kube: m.Kube, value: v, sealed: sealed, errs: errs})
	}
	var out []manifest.Sourced
	size := 0
	for _, o := range s.objects {
		pods := s.workload(o)
		for _, p := range pods {
			size += podBytes(p.Manifest)
		}
		if size > MaxFilesBytes {
			// Each pod carries its copy out of the helper.
			s.errs = append(s.errs, &manifest.Error{Origin: o.origin, Detail: fmt.Sprintf("the files, env, command lines, labels and annotations of the pods of the source (replicas counted) hold more than %d bytes: %v", MaxFilesBytes, manifest.ErrTooLarge), Err: manifest.ErrTooLarge})
			return nil, s.errs
		}
		for i := range pods {
			s.checkSealed(&pods[i])
		}
		out = append(out, pods...)
	}
	return out, s.errs
}

// MaxFilesBytes bounds the bytes of the files (ConfigMaps, Secrets, the
// downward API) the pods of one source mount, and of their env, command
// lines, labels and annotations, together: a file or value counted once
// for each pod holding it (replicas multiply them).
const MaxFilesBytes = 4 * manifest.MaxSize

// podBytes is the bytes of m's files volumes and env values.
func podBytes(m manifest.Manifest) int {
	n := 0
	for _, v := range m.Volumes {
		if v.Files != nil {
			n += v.Files.Size()
		}
	}
	for _, c := range slices.Concat(m.Containers, m.InitContainers) {
		for _, e := range c.Env {
			n += len(e.Name) + len(e.Value)
		}
		for _, a := range slices.Concat(c.Command, c.Args) {
			n += len(a)
		}
	}
	for k, v := range m.Labels {
		n += len(k) + len(v)
	}
	if m.Object != nil {
		for k, v := range m.Object.Annotations {
			n += len(k) + len(v)
		}
	}
	return n
}

// add keeps o, indexing a data object by its key (a second one of the
// same key is an error naming both).
func (s *source) add(o object) {
	kind := o.kube.Kind
	if _, ok := dataRules[kind]; !ok {
		s.objects = append(s.objects, o)
		return
	}
	meta := objectMeta(o.value)
	if errs := append(o.errs, s.checkObject(o)...); len(errs) > 0 {
		s.errs = append(s.errs, errs...)
		return
	}
	key := dataKey{kind, namespaceOf(meta), meta.Name}
	if first, ok := s.data[key]; ok {
		s.errs = append(s.errs, s.objectError(o, "metadata.name", "a second %s %q in namespace %s (the first: %s, document %d)", kind, meta.Name, key.namespace, first.origin, first.origin.Index+1))
		return
	}
	if kind == "PersistentVolumeClaim" {
		// Its Docker volume's name flattens the namespace: two claims
		// must not share one volume.
		vol := PodID(meta.Namespace, meta.Name, 0)
		if first, ok := s.volumes[vol]; ok {
			s.errs = append(s.errs, s.objectError(o, "metadata.name", "its Docker volume %s is also the one of PersistentVolumeClaim %s/%s (%s): rename one", vol, first.namespace, first.name, s.data[first].origin))
			return
		}
		s.volumes[vol] = key
	}
	s.data[key] = o
	s.noteSealed(o)
}

// checkObject walks the fields o sets, returning its refused ones and
// a missing or invalid name as errors.
func (s *source) checkObject(o object) []*manifest.Error {
	meta := objectMeta(o.value)
	var errs []*manifest.Error
	if !manifest.IsDNSLabel(meta.Name) && !isDNSSubdomain(meta.Name) {
		errs = append(errs, s.objectError(o, "metadata.name", "%q is not a DNS name (lowercase letters, digits, '-' and '.')", meta.Name))
	}
	if meta.Namespace != "" && !manifest.IsDNSLabel(meta.Namespace) {
		errs = append(errs, s.objectError(o, "metadata.namespace", "%q is not a DNS label", meta.Namespace))
	}
	w := walkFields(o.value, objectRules(o.kube.Kind))
	for _, f := range w.refused {
		errs = append(errs, s.objectError(o, f.path, "%s", f.rule.why))
	}
	return errs
}

// notes are the accepted fields o sets, as notes of its pods.
func notes(origin manifest.Origin, pod string, o object) []*manifest.Error {
	w := walkFields(o.value, objectRules(o.kube.Kind))
	var out []*manifest.Error
	for _, f := range w.accepted {
		out = append(out, &manifest.Error{Origin: origin, Pod: pod, Field: f.path, Detail: "accepted, not enforced: " + f.rule.why})
	}
	return out
}

// objectError is an error of o's field: a workload's names its pod id,
// another object's its kind and name.
func (s *source) objectError(o object, field, format string, args ...any) *manifest.Error {
	e := &manifest.Error{Origin: o.origin, Field: field, Detail: fmt.Sprintf(format, args...)}
	if _, ok := workloadRules[o.kube.Kind]; ok {
		meta := objectMeta(o.value)
		e.Pod = PodID(meta.Namespace, meta.Name, 0)
		return e
	}
	e.Field = o.kube.String() + ": " + field
	return e
}

// objectMeta is the metadata of a decoded object.
func objectMeta(v any) *metav1.ObjectMeta {
	switch o := v.(type) {
	case *corev1.Pod:
		return &o.ObjectMeta
	case *corev1.ConfigMap:
		return &o.ObjectMeta
	case *corev1.Secret:
		return &o.ObjectMeta
	case *corev1.PersistentVolumeClaim:
		return &o.ObjectMeta
	case *appsv1.Deployment:
		return &o.ObjectMeta
	case *appsv1.DaemonSet:
		return &o.ObjectMeta
	case *batchv1.Job:
		return &o.ObjectMeta
	}
	panic(fmt.Sprintf("kube: no metadata for %T", v))
}

func namespaceOf(meta *metav1.ObjectMeta) string {
	if meta.Namespace == "" {
		return "default"
	}
	return meta.Namespace
}

// workload translates workload o into its pods. A pod of a workload
// with errors carries them (Sourced.Errors): validation rejects it alone,
// and a running pod of its id keeps running.
func (s *source) workload(o object) []manifest.Sourced {
	errs := append(o.errs, s.checkObject(o)...)
	meta := objectMeta(o.value)
	spec, shapeErrs := s.shape(o, PodID(meta.Namespace, meta.Name, 0))
	if len(shapeErrs) > 0 {
		// Which pods the object makes is not known (a replicas count out
		// of range, a selector that does not match): its errors are the
		// source's, which keeps its last good set, so the pods running
		// keep running.
		s.errs = append(s.errs, append(errs, shapeErrs...)...)
		return nil
	}
	if spec.replicas == 0 {
		// No pod to carry the errors: the source's.
		_, errs = s.podOf(o, spec, 1, errs)
		s.errs = append(s.errs, errs...)
		return nil
	}
	var out []manifest.Sourced
	for i := range spec.replicas {
		replica := 0
		if spec.numbered {
			replica = i + 1
		}
		pod, podErrs := s.podOf(o, spec, replica, errs)
		pod.Errors = podErrs
		out = append(out, pod)
	}
	return out
}

// podOf translates replica (0: the only pod) of workload o, shaped by
// spec; errs are the object's errors, returned with the pod's own, each
// naming the pod.
func (s *source) podOf(o object, spec shape, replica int, errs []*manifest.Error) (manifest.Sourced, []*manifest.Error) {
	meta := objectMeta(o.value)
	id := PodID(meta.Namespace, meta.Name, replica)
	p := &podTranslation{object: o, data: s.data, shared: s.shared, origin: o.origin, id: id, namespace: namespaceOf(meta), prefix: spec.prefix}
	p.name = meta.Name
	if replica > 0 {
		p.name = fmt.Sprintf("%s-%d", meta.Name, replica)
	}
	m := p.translate(spec.template)
	m.MinReadySeconds, m.ProgressDeadlineSeconds = spec.minReady, spec.deadline
	m.Object = &manifest.ObjectRef{Kind: o.kube.Kind, Namespace: meta.Namespace, Name: meta.Name, Annotations: maps.Clone(spec.template.Annotations)}
	podErrs := make([]*manifest.Error, 0, len(errs)+len(p.errs))
	for _, e := range append(slices.Clone(errs), p.errs...) {
		c := *e
		c.Pod = id
		podErrs = append(podErrs, &c)
	}
	return manifest.Sourced{Origin: o.origin, Manifest: m, Notes: append(notes(o.origin, id, o), p.notes...), Keys: p.keyMap()}, podErrs
}

// shape is what a workload makes: how many pods (numbered or not), from
// which template, with which rollout settings.
type shape struct {
	template *corev1.PodTemplateSpec
	prefix   string
	replicas int
	numbered bool
	minReady int64
	deadline int64
}

// shape reads workload o's own fields; with errors, the shape of one
// pod, to carry them.
func (s *source) shape(o object, base string) (shape, []*manifest.Error) {
	var sh shape
	fail := func(field, format string, args ...any) (shape, []*manifest.Error) {
		sh.replicas, sh.numbered = 1, false
		return sh, []*manifest.Error{{Origin: o.origin, Pod: base, Field: field, Detail: fmt.Sprintf(format, args...)}}
	}
	switch w := o.value.(type) {
	case *corev1.Pod:
		return shape{template: &corev1.PodTemplateSpec{ObjectMeta: w.ObjectMeta, Spec: w.Spec}, replicas: 1}, nil
	case *appsv1.Deployment:
		sh = shape{template: &w.Spec.Template, prefix: "spec.template.", replicas: 1, numbered: true,
			minReady: int64(w.Spec.MinReadySeconds)}
		if w.Spec.Replicas != nil {
			sh.replicas = int(*w.Spec.Replicas)
		}
		if sh.replicas < 0 || sh.replicas > MaxReplicas {
			return fail("spec.replicas", "%d is not in 0..%d", sh.replicas, MaxReplicas)
		}
		if w.Spec.ProgressDeadlineSeconds != nil {
			sh.deadline = int64(*w.Spec.ProgressDeadlineSeconds)
		}
		if t := w.Spec.Strategy.Type; t != "" && t != appsv1.RecreateDeploymentStrategyType && t != appsv1.RollingUpdateDeploymentStrategyType {
			return fail("spec.strategy.type", "%q is not Recreate or RollingUpdate", t)
		}
		if r := w.Spec.Template.Spec.RestartPolicy; r != "" && r != corev1.RestartPolicyAlways {
			return fail("spec.template.spec.restartPolicy", "%q: a Deployment's pods restart Always", r)
		}
		return sh, selects(o, base, w.Spec.Selector, w.Spec.Template.Labels)
	case *appsv1.DaemonSet:
		sh = shape{template: &w.Spec.Template, prefix: "spec.template.", replicas: 1, minReady: int64(w.Spec.MinReadySeconds)}
		if r := w.Spec.Template.Spec.RestartPolicy; r != "" && r != corev1.RestartPolicyAlways {
			return fail("spec.template.spec.restartPolicy", "%q: a DaemonSet's pods restart Always", r)
		}
		return sh, selects(o, base, w.Spec.Selector, w.Spec.Template.Labels)
	case *batchv1.Job:
		sh = shape{template: &w.Spec.Template, prefix: "spec.template.", replicas: 1}
		for field, n := range map[string]*int32{"spec.parallelism": w.Spec.Parallelism, "spec.completions": w.Spec.Completions} {
			if n != nil && *n != 1 {
				return fail(field, "%d: not supported by hostlet yet (a Job runs one pod to completion)", *n)
			}
		}
		if r := w.Spec.Template.Spec.RestartPolicy; r != corev1.RestartPolicyOnFailure && r != corev1.RestartPolicyNever {
			return fail("spec.template.spec.restartPolicy", "%q: a Job's pod restarts OnFailure or Never", r)
		}
		return sh, nil
	}
	panic(fmt.Sprintf("kube: %s is not a workload", o.kube.Kind))
}

// selects checks that a workload's selector matches its template's
// labels, as the API server does.
func selects(o object, base string, sel *metav1.LabelSelector, labels map[string]string) []*manifest.Error {
	fail := func(field, detail string) []*manifest.Error {
		return []*manifest.Error{{Origin: o.origin, Pod: base, Field: field, Detail: detail}}
	}
	if sel == nil || len(sel.MatchLabels) == 0 {
		return fail("spec.selector", "required: the matchLabels of the pod template's labels")
	}
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		if labels[k] != sel.MatchLabels[k] {
			return fail("spec.selector.matchLabels."+k, "does not match the pod template's labels (spec.template.metadata.labels)")
		}
	}
	return nil
}
