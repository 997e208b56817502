// Package kube translates the Kubernetes objects of one source into
// hostlet pods: Pods, Deployments (a pod per replica), DaemonSets and Jobs
// become pods; ConfigMaps, Secrets and PersistentVolumeClaims are what
// they look up, in the same source and namespace. Objects are decoded
// strictly with the real types (k8s.io/api), and every field an object
// sets is translated, accepted and said to be not enforced (a note), or
// refused with its field path: nothing is dropped without a word.
package kube

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"

	"github.com/hostlet/hostlet/manifest"
)

// MaxReplicas bounds a Deployment's replicas.
const MaxReplicas = 100

// object is one decoded object of the source with its origin.
type object struct {
	origin manifest.Origin
	kube   *manifest.KubeObject
	value  any
	// sealed are a Secret's SOPS-encrypted data values by key
	// (sealedSecret).
	sealed map[string]string
	// errs are the unknown and duplicate fields decoding found.
	errs []*manifest.Error
}

// kinds are the kinds hostlet reads, by kind, with the apiVersion each is
// read in and a new value of its type.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Pod":                   {"v1", func() any { return new(corev1.Pod) }},
	"ConfigMap":             {"v1", func() any { return new(corev1.ConfigMap) }},
	"Secret":                {"v1", func() any { return new(corev1.Secret) }},
	"PersistentVolumeClaim": {"v1", func() any { return new(corev1.PersistentVolumeClaim) }},
	"Deployment":            {"apps/v1", func() any { return new(appsv1.Deployment) }},
	"DaemonSet":             {"apps/v1", func() any { return new(appsv1.DaemonSet) }},
	"Job":                   {"batch/v1", func() any { return new(batchv1.Job) }},
}

// instead says what to use instead of a kind hostlet does not run.
var instead = map[string]string{
	"Service":                 "a pod's ports are published on the host with hostPort; there are no Services on a single host",
	"Ingress":                 "run a reverse proxy (Traefik, Caddy, nginx) as a pod publishing hostPort 80 and 443",
	"StatefulSet":             "use a Deployment whose pods mount a PersistentVolumeClaim, or one Pod per replica",
	"ReplicaSet":              "use a Deployment",
	"ReplicationController":   "use a Deployment",
	"CronJob":                 "not supported by hostlet yet; run a Job from the host's timer",
	"Namespace":               "a namespace is the prefix of its pods' ids; leave the Namespace out",
	"ServiceAccount":          "there is no API server on a single host",
	"Role":                    "there is no API server on a single host",
	"RoleBinding":             "there is no API server on a single host",
	"ClusterRole":             "there is no API server on a single host",
	"ClusterRoleBinding":      "there is no API server on a single host",
	"PersistentVolume":        "use a PersistentVolumeClaim (a named Docker volume) or a hostPath volume",
	"StorageClass":            "a PersistentVolumeClaim is a Docker volume of the engine's local driver",
	"NetworkPolicy":           "not supported on a single host; use the host's firewall",
	"HorizontalPodAutoscaler": "not supported on a single host; set the Deployment's replicas",
	"PodDisruptionBudget":     "not supported on a single host: there is no eviction",
	"LimitRange":              "set each container's resources.limits",
	"ResourceQuota":           "set each container's resources.limits",
}

// decode decodes o strictly into its type: a value of the wrong type, a
// kind or apiVersion hostlet does not read are errors naming the object
// (and no value); an unknown or duplicate field is an error returned
// beside the value.
func decode(origin manifest.Origin, o *manifest.KubeObject) (any, map[string]string, []*manifest.Error) {
	fail := func(field, format string, args ...any) []*manifest.Error {
		e := &manifest.Error{Origin: origin, Field: field, Detail: fmt.Sprintf(format, args...)}
		if _, ok := workloadRules[o.Kind]; ok {
			e.Pod = PodID(o.Namespace, o.Name, 0)
		} else {
			e.Field = strings.TrimSuffix(o.String()+": "+field, ": ")
		}
		return []*manifest.Error{e}
	}
	k, ok := kinds[o.Kind]
	switch {
	case !ok && instead[o.Kind] != "":
		return nil, nil, fail("kind", "%s is not run by hostlet: %s", o.Kind, instead[o.Kind])
	case !ok:
		return nil, nil, fail("kind", "%q is not a kind hostlet runs (Pod, Deployment, DaemonSet, Job, ConfigMap, Secret, PersistentVolumeClaim)", o.Kind)
	case o.APIVersion != k.apiVersion:
		return nil, nil, fail("apiVersion", "%q: hostlet reads %s in %s", o.APIVersion, o.Kind, k.apiVersion)
	}
	raw := o.Raw
	var sealed map[string]string
	if len(manifest.EncryptedValues(string(raw))) > 0 {
		switch {
		case o.Kind != "Secret":
			return nil, nil, fail("", "holds SOPS-encrypted values (ENC[...]): only a Secret's data and stringData values may be encrypted")
		case !o.Sealed:
			return nil, nil, fail("", "holds SOPS-encrypted values (ENC[...]) outside a SOPS file of a file or git source (one with its sops metadata and MAC)")
		}
		var field string
		var err error
		if raw, sealed, field, err = sealedSecret(raw); err != nil {
			return nil, nil, fail(field, "%v", err)
		}
	}
	v := k.new()
	strict, err := kjson.UnmarshalStrict(raw, v)
	if err != nil {
		return nil, nil, fail("", "%s", typeError(err))
	}
	var errs []*manifest.Error
	for _, s := range strict {
		field, detail := "", s.Error()
		var fe kjson.FieldError
		if errors.As(s, &fe) {
			field = strings.TrimPrefix(fe.FieldPath(), ".")
			detail, _, _ = strings.Cut(detail, " \"")
			detail += " (field names are case-sensitive)"
		}
		errs = append(errs, fail(field, "%s", detail)...)
	}
	return v, sealed, errs
}

// typeError makes a decoder's type error readable.
func typeError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if i := strings.Index(msg, "into Go struct field "); i >= 0 {
		what := strings.TrimPrefix(msg[:i], "cannot unmarshal ")
		field, typ, _ := strings.Cut(msg[i+len("into Go struct field "):], " of type ")
		if dot := strings.Index(field, "."); dot >= 0 {
			field = field[dot+1:]
		}
		// Embedded Go types (ProbeHandler, VolumeSource) are no part of
		// the object's paths.
		parts := strings.Split(field, ".")
		parts = slices.DeleteFunc(parts, func(p string) bool { return p != "" && p[0] >= 'A' && p[0] <= 'Z' })
		return fmt.Sprintf("%s: wrong type: got %s, want %s", strings.Join(parts, "."), strings.TrimSpace(what), typ)
	}
	return msg
}

// PodID is the pod id of a workload's pod: its name, prefixed by its
// namespace unless that is default (or unset), and followed by "-<i>"
// for replica i of a Deployment (i from 1).
func PodID(namespace, name string, replica int) string {
	id := name
	if namespace != "" && namespace != "default" {
		id = namespace + "-" + name
	}
	if replica > 0 {
		id = fmt.Sprintf("%s-%d", id, replica)
	}
	return id
}

// isDNSSubdomain reports whether s is an RFC 1123 subdomain: DNS labels
// joined by dots, at most 253 bytes (a Kubernetes object's name).
func isDNSSubdomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for l := range strings.SplitSeq(s, ".") {
		if !manifest.IsDNSLabel(l) {
			return false
		}
	}
	return true
}
