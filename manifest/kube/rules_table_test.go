package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hostlet/hostlet/manifest"
)

// ruleEntry is one rule of the tables with the kind and field path
// pattern it applies to.
type ruleEntry struct {
	kind, pattern string
	rule          rule
}

// allRules lists every rule of the tables, each with the object kind and
// the full field path pattern it is looked up by.
func allRules() []ruleEntry {
	var out []ruleEntry
	add := func(kind, prefix string, rules map[string]rule) {
		for _, p := range slices.Sorted(maps.Keys(rules)) {
			out = append(out, ruleEntry{kind, prefix + p, rules[p]})
		}
	}
	add("Pod", "metadata.", metaRules)
	add("Pod", "", podRules)
	add("Pod", "spec.containers[].", containerRules)
	add("Pod", "spec.containers[].livenessProbe.", probeRules)
	add("Pod", "spec.containers[].readinessProbe.", probeRules)
	add("Pod", "spec.containers[].startupProbe.", probeRules)
	add("Pod", "spec.containers[].lifecycle.postStart.", hookRules)
	add("Pod", "spec.containers[].lifecycle.preStop.", hookRules)
	add("Pod", "spec.initContainers[].", initContainerRules)
	add("Pod", "spec.volumes[].", volumeRules)
	for _, src := range []string{"configMap", "secret", "projected.sources[].configMap", "projected.sources[].secret"} {
		add("Pod", "spec.volumes[]."+src+".items[].", keyToPathRules)
	}
	for _, src := range []string{"downwardAPI", "projected.sources[].downwardAPI"} {
		add("Pod", "spec.volumes[]."+src+".items[].", downwardFileRules)
	}
	for _, kind := range slices.Sorted(maps.Keys(workloadRules)) {
		add(kind, "", workloadRules[kind])
	}
	for _, kind := range slices.Sorted(maps.Keys(dataRules)) {
		add(kind, "", dataRules[kind])
	}
	return out
}

var rootTypes = map[string]reflect.Type{
	"Pod":                   reflect.TypeFor[corev1.Pod](),
	"Deployment":            reflect.TypeFor[appsv1.Deployment](),
	"DaemonSet":             reflect.TypeFor[appsv1.DaemonSet](),
	"Job":                   reflect.TypeFor[batchv1.Job](),
	"ConfigMap":             reflect.TypeFor[corev1.ConfigMap](),
	"Secret":                reflect.TypeFor[corev1.Secret](),
	"PersistentVolumeClaim": reflect.TypeFor[corev1.PersistentVolumeClaim](),
}

// fieldType is the Go type of the field at pattern of t (nil: none).
func fieldType(t reflect.Type, pattern string) reflect.Type {
	for part := range strings.SplitSeq(pattern, ".") {
		name, list := strings.CutSuffix(part, "[]")
		f, ok := jsonField(t, name)
		if !ok {
			return nil
		}
		t = deref(f.Type)
		if list {
			if t.Kind() != reflect.Slice {
				return nil
			}
			t = deref(t.Elem())
		}
	}
	return t
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// jsonField is t's field of JSON name name, embedded ones included.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	if t.Kind() != reflect.Struct {
		return reflect.StructField{}, false
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == name {
			return f, true
		}
		if tag == "" && f.Anonymous {
			if g, ok := jsonField(deref(f.Type), name); ok {
				return g, true
			}
		}
	}
	return reflect.StructField{}, false
}

// TestEveryRuleNamesAFieldOfTheRealTypes keeps the tables true to
// k8s.io/api: a rule for a field the types do not have is never used
// (a renamed field would be refused as unknown instead).
func TestEveryRuleNamesAFieldOfTheRealTypes(t *testing.T) {
	for _, e := range allRules() {
		if fieldType(rootTypes[e.kind], e.pattern) == nil {
			t.Errorf("%s %s: no such field in k8s.io/api", e.kind, e.pattern)
		}
	}
}

// sample is a JSON value of type t that is not its zero value.
func sample(t reflect.Type, depth int) any {
	t = deref(t)
	switch t.String() {
	case "resource.Quantity":
		return "1"
	case "intstr.IntOrString":
		return 1
	case "v1.Time":
		return "2024-01-01T00:00:00Z"
	}
	switch t.Kind() {
	case reflect.String:
		return "x"
	case reflect.Bool:
		return true
	case reflect.Int, reflect.Int32, reflect.Int64:
		return 1
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "eA=="
		}
		return []any{sample(t.Elem(), depth+1)}
	case reflect.Map:
		return map[string]any{"x": sample(t.Elem(), depth+1)}
	case reflect.Struct:
		return sampleStruct(t, depth)
	}
	panic(fmt.Sprintf("no sample of %s", t))
}

// sampleStruct sets the first field of t that can be set.
func sampleStruct(t reflect.Type, depth int) map[string]any {
	if depth > 8 {
		return map[string]any{}
	}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == "" && f.Anonymous {
			if m := sampleStruct(deref(f.Type), depth+1); len(m) > 0 {
				return m
			}
			continue
		}
		return map[string]any{tag: sample(f.Type, depth+1)}
	}
	return map[string]any{}
}

// setPath sets pattern (lists of one element) in obj to v.
func setPath(obj map[string]any, pattern string, v any) {
	parts := strings.Split(pattern, ".")
	cur := obj
	for i, part := range parts {
		name, list := strings.CutSuffix(part, "[]")
		last := i == len(parts)-1
		switch {
		case last && !list:
			cur[name] = v
		case last:
			cur[name] = []any{v}
		case list:
			l, _ := cur[name].([]any)
			if len(l) == 0 {
				l = []any{map[string]any{}}
				cur[name] = l
			}
			cur = l[0].(map[string]any)
		default:
			next, ok := cur[name].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[name] = next
			}
			cur = next
		}
	}
}

// baseObject is a valid object of kind, to set one field in.
func baseObject(kind string) map[string]any {
	pod := func() map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "a"}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "busybox"}}}}
	}
	obj := map[string]any{"metadata": map[string]any{"name": "a"}}
	switch kind {
	case "Pod":
		obj["apiVersion"], obj["spec"] = "v1", pod()["spec"]
	case "Deployment", "DaemonSet":
		obj["apiVersion"] = "apps/v1"
		obj["spec"] = map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "a"}}, "template": pod()}
	case "Job":
		obj["apiVersion"] = "batch/v1"
		tmpl := pod()
		tmpl["spec"].(map[string]any)["restartPolicy"] = "Never"
		obj["spec"] = map[string]any{"template": tmpl}
	default:
		obj["apiVersion"] = "v1"
	}
	obj["kind"] = kind
	return obj
}

// translateOne translates obj, returning every error and note text.
func translateOne(t *testing.T, obj map[string]any) (errs, notes []*manifest.Error) {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	k := &manifest.KubeObject{APIVersion: obj["apiVersion"].(string), Kind: obj["kind"].(string), Name: "a", Raw: raw}
	pods, srcErrs := Translate([]manifest.Sourced{{Origin: manifest.Origin{Source: "s", File: "f.yaml"}, Kube: k}})
	errs = srcErrs
	for _, p := range pods {
		errs = append(errs, p.Errors...)
		notes = append(notes, p.Notes...)
	}
	return errs, notes
}

// TestEveryRefusedFieldIsRefusedByItsPath sets each refused field of the
// tables, alone, in a valid object: the translation fails with an error
// naming that field's path and saying why, whatever the field.
func TestEveryRefusedFieldIsRefusedByItsPath(t *testing.T) {
	for _, e := range allRules() {
		if e.rule.do != refused {
			continue
		}
		t.Run(e.kind+" "+e.pattern, func(t *testing.T) {
			obj := baseObject(e.kind)
			setPath(obj, e.pattern, sample(fieldType(rootTypes[e.kind], e.pattern), 0))
			path := strings.ReplaceAll(e.pattern, "[]", "[0]")
			errs, _ := translateOne(t, obj)
			for _, err := range errs {
				if strings.HasSuffix(err.Field, path) && err.Detail == e.rule.why {
					return
				}
			}
			t.Errorf("set alone, %s is not refused by its path; errors: %v", path, errs)
		})
	}
}

// validSamples are values of accepted fields whose value is checked too
// (any other sample is refused before the note).
var validSamples = map[string]any{"Deployment spec.strategy.type": "RollingUpdate"}

// TestEveryAcceptedFieldIsNoted sets each accepted field of a workload
// or data object alone: the pod carries a note naming the field, so an
// author learns it is not enforced.
func TestEveryAcceptedFieldIsNoted(t *testing.T) {
	for _, e := range allRules() {
		if e.rule.do != accepted || e.kind == "ConfigMap" || e.kind == "Secret" || e.kind == "PersistentVolumeClaim" {
			continue
		}
		t.Run(e.kind+" "+e.pattern, func(t *testing.T) {
			obj := baseObject(e.kind)
			value, ok := validSamples[e.kind+" "+e.pattern]
			if !ok {
				value = sample(fieldType(rootTypes[e.kind], e.pattern), 0)
			}
			setPath(obj, e.pattern, value)
			path := strings.ReplaceAll(e.pattern, "[]", "[0]")
			errs, notes := translateOne(t, obj)
			for _, n := range notes {
				if strings.HasSuffix(n.Field, path) && strings.Contains(n.Detail, e.rule.why) {
					return
				}
			}
			t.Errorf("set alone, %s has no note; notes: %v, errors: %v", path, notes, errs)
		})
	}
}
