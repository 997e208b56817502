package kube

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/hostlet/hostlet/manifest"
)

// env translates a container's environment: envFrom first (each
// ConfigMap or Secret's keys in order, prefixed), then env, a later value
// of a name replacing an earlier one; $(NAME) in a value expands a name
// defined before it, as in Kubernetes. secret names the variables that
// hold a Secret's value (or one expanded from it).
func (p *podTranslation) env(field string, c *corev1.Container) (env []manifest.EnvVar, secret map[string]bool) {
	vars, secret := map[string]string{}, map[string]bool{}
	set := func(name, value string, fromSecret bool) {
		if i := slices.IndexFunc(env, func(e manifest.EnvVar) bool { return e.Name == name }); i >= 0 {
			env = slices.Delete(env, i, i+1)
		}
		env = append(env, manifest.EnvVar{Name: name, Value: value})
		vars[name], secret[name] = value, fromSecret
	}
	for i, from := range c.EnvFrom {
		f := fmt.Sprintf("%s.envFrom[%d]", field, i)
		var data map[string][]byte
		switch {
		case from.ConfigMapRef != nil:
			data = p.lookup(f+".configMapRef.name", "ConfigMap", from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		case from.SecretRef != nil:
			data = p.lookup(f+".secretRef.name", "Secret", from.SecretRef.Name, from.SecretRef.Optional)
		default:
			p.errorf(f, "set configMapRef or secretRef")
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, string(data[k]), from.SecretRef != nil)
		}
	}
	for i, e := range c.Env {
		f := fmt.Sprintf("%s.env[%d]", field, i)
		if e.ValueFrom == nil {
			tainted := slices.ContainsFunc(references(e.Value, vars), func(n string) bool { return secret[n] })
			set(e.Name, p.expand(f+".value", e.Value, vars), tainted)
			continue
		}
		if v, ok := p.valueFrom(f+".valueFrom", c, e.ValueFrom); ok {
			set(e.Name, v, e.ValueFrom.SecretKeyRef != nil)
		}
	}
	return env, secret
}

// valueFrom is the value of an env var's valueFrom (ok false: none, an
// optional key that is not there, or an error added).
func (p *podTranslation) valueFrom(field string, c *corev1.Container, from *corev1.EnvVarSource) (string, bool) {
	switch {
	case from.ConfigMapKeyRef != nil:
		r := from.ConfigMapKeyRef
		return p.key(field+".configMapKeyRef", "ConfigMap", r.Name, r.Key, r.Optional)
	case from.SecretKeyRef != nil:
		r := from.SecretKeyRef
		return p.key(field+".secretKeyRef", "Secret", r.Name, r.Key, r.Optional)
	case from.FieldRef != nil:
		return p.fieldRef(field+".fieldRef.fieldPath", from.FieldRef.FieldPath)
	case from.ResourceFieldRef != nil:
		return p.resourceRef(field+".resourceFieldRef", c, from.ResourceFieldRef)
	}
	p.errorf(field, "set configMapKeyRef, secretKeyRef, fieldRef or resourceFieldRef")
	return "", false
}

// key is the value of key of a ConfigMap or Secret.
func (p *podTranslation) key(field, kind, name, key string, optional *bool) (string, bool) {
	data := p.lookup(field+".name", kind, name, optional)
	if data == nil {
		return "", false
	}
	v, ok := data[key]
	if !ok && !isTrue(optional) {
		p.errorf(field+".key", "%s %q has no key %q", kind, name, key)
	}
	return string(v), ok
}

// lookup returns the data of a ConfigMap or Secret of the pod's
// namespace in the source: nil when it is not there (an error of
// nameField, the field naming it, unless optional).
func (p *podTranslation) lookup(nameField, kind, name string, optional *bool) map[string][]byte {
	o, ok := p.data[dataKey{kind, p.namespace, name}]
	if !ok {
		if !isTrue(optional) {
			p.errorf(nameField, "%s %q is not in namespace %s of this source", kind, name, p.namespace)
		}
		return nil
	}
	data, err := p.shared.dataOf(o)
	if err != nil {
		p.errorf(nameField, "%s %q: %v", kind, name, err)
		return nil
	}
	return data
}

func isTrue(b *bool) bool { return b != nil && *b }

// dataOf is the data of a ConfigMap (data and binaryData) or a Secret
// (data, then stringData over it).
func dataOf(o object) (map[string][]byte, error) {
	out := map[string][]byte{}
	switch v := o.value.(type) {
	case *corev1.ConfigMap:
		for k, s := range v.Data {
			out[k] = []byte(s)
		}
		for k, b := range v.BinaryData {
			if _, dup := out[k]; dup {
				return nil, fmt.Errorf("key %q is in both data and binaryData", k)
			}
			out[k] = b
		}
	case *corev1.Secret:
		for k, b := range v.Data {
			out[k] = b
		}
		for k, enc := range o.sealed {
			// Decrypted on the host, then decoded (base64 under the
			// encryption).
			out[k] = []byte(manifest.Base64Part(enc))
		}
		for k, s := range v.StringData {
			out[k] = []byte(s)
		}
	}
	for k, b := range out {
		if !validKey(k) {
			return nil, fmt.Errorf("key %q is not a valid key (letters, digits, '-', '_' and '.')", k)
		}
		if err := checkSealedValue(o, k, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkSealedValue refuses value b of key k of o (as dataOf gives it)
// holding an encrypted value that is not one of an encrypted Secret's
// (decode took its data's out; its stringData's are whole values), or
// text hostlet keeps for its own secrets: a ConfigMap's, a plain
// Secret's, or one decoded from base64, would be decrypted or decoded
// into a pod as if the Secret's.
func checkSealedValue(o object, k string, b []byte) error {
	s := string(b)
	if !strings.Contains(s, "ENC[") && !strings.Contains(s, "{{hostlet-") {
		return nil
	}
	if _, sealed := o.sealed[k]; sealed {
		return nil // manifest.Base64Part of a value decode took out
	}
	sec, isSecret := o.value.(*corev1.Secret)
	if enc := manifest.EncryptedValues(s); isSecret && o.kube.Sealed && len(enc) == 1 && enc[0] == s && sec.StringData[k] == s {
		return nil
	}
	return fmt.Errorf("key %q holds an encrypted value (SOPS) or text hostlet keeps for its own secrets: only an encrypted Secret's data and stringData values, whole, may be encrypted", k)
}

// validKey reports whether k is a ConfigMap or Secret key Kubernetes
// accepts: letters, digits, '-', '_' and '.', not "." or "..".
func validKey(k string) bool {
	if k == "" || k == "." || k == ".." || len(k) > 253 {
		return false
	}
	return strings.IndexFunc(k, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	}) < 0
}

// fieldRef is the value of a downward API field of the pod.
func (p *podTranslation) fieldRef(field, path string) (string, bool) {
	switch {
	case path == "metadata.name":
		return p.name, true
	case path == "metadata.namespace":
		return p.namespace, true
	case strings.HasPrefix(path, "metadata.labels['") && strings.HasSuffix(path, "']"):
		return p.labels[path[len("metadata.labels['"):len(path)-2]], true
	case strings.HasPrefix(path, "metadata.annotations['") && strings.HasSuffix(path, "']"):
		return p.annots[path[len("metadata.annotations['"):len(path)-2]], true
	case path == "status.podIP" || path == "status.podIPs":
		// Known once the pod runs: the host gives it (one address, IPv4,
		// as on a single-stack cluster).
		return manifest.FieldToken(manifest.FieldPodIP), true
	case path == "status.hostIP" || path == "status.hostIPs":
		return manifest.FieldToken(manifest.FieldHostIP), true
	default:
		p.errorf(field, "%q: not supported by hostlet (metadata.name, metadata.namespace, metadata.labels['KEY'], metadata.annotations['KEY'], status.podIP(s) and status.hostIP(s) are)", path)
	}
	return "", false
}

// resourceRef is the value of a container's limit, in units of the
// divisor (rounded up), as Kubernetes gives it.
func (p *podTranslation) resourceRef(field string, c *corev1.Container, r *corev1.ResourceFieldSelector) (string, bool) {
	if r.ContainerName != "" && (c == nil || r.ContainerName != c.Name) {
		i := slices.IndexFunc(p.containers, func(o corev1.Container) bool { return o.Name == r.ContainerName })
		if i < 0 {
			p.errorf(field+".containerName", "no container %q in the pod", r.ContainerName)
			return "", false
		}
		c = &p.containers[i]
	}
	kind, name, _ := strings.Cut(r.Resource, ".")
	q, ok := c.Resources.Limits[corev1.ResourceName(name)]
	if kind == "requests" {
		q, ok = c.Resources.Requests[corev1.ResourceName(name)]
	}
	if (kind != "limits" && kind != "requests") || (name != "cpu" && name != "memory") {
		p.errorf(field+".resource", "%q: not supported by hostlet (limits.cpu, limits.memory, requests.cpu and requests.memory are)", r.Resource)
		return "", false
	}
	if !ok {
		p.errorf(field+".resource", "%s is not set: without it Kubernetes gives the node's capacity, which hostlet does not", r.Resource)
		return "", false
	}
	divisor := r.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	return strconv.FormatInt(divideUp(q, divisor, name == "cpu"), 10), true
}

// divideUp is q divided by d, rounded up (cpu in thousandths).
func divideUp(q, d resource.Quantity, cpu bool) int64 {
	if cpu {
		return int64(math.Ceil(float64(q.MilliValue()) / float64(max(d.MilliValue(), 1))))
	}
	return int64(math.Ceil(float64(q.Value()) / float64(max(d.Value(), 1))))
}
