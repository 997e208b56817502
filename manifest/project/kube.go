package project

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
)

// ErrNoTranslator is the error of Kubernetes objects read without a
// renderer.
var ErrNoTranslator = errors.New("kubernetes objects are not read here (no renderer)")

// MaxKubeBytes bounds the Kubernetes objects of one source, as their
// JSON, handed to the helper at once; MaxSealedBytes the encrypted files
// its pods carry, each pod its copy (a Secret's file for every replica
// that reads it: saved sets and published sets hold one per pod).
const (
	MaxKubeBytes   = MaxBytes
	MaxSealedBytes = MaxBytes
)

// TranslateKube translates the Kubernetes objects among ms, the
// manifests of source, with r's helper (the one that renders Compose
// projects: the Kubernetes types stay out of the agent's memory too):
// each workload's pods take its place, the objects that are not
// workloads leave, the other manifests stay as they are. The error, if
// any, is a *multierror.Error of *manifest.Error: the source's problems
// (a pod's own are its Errors); with one, the pods are returned beside
// it. seal attaches to a pod the SOPS files its encrypted values (a
// SOPS-encrypted Secret's) come from; a source that decrypts none passes
// nil, and such a value is an error of its pod.
func TranslateKube(ctx context.Context, r *Renderer, source string, ms []manifest.Sourced, seal func(*manifest.Sourced)) ([]manifest.Sourced, error) {
	var objects []manifest.Sourced
	size := 0
	for _, m := range ms {
		if m.Kube != nil {
			objects = append(objects, m)
			size += len(m.Kube.Raw)
		}
	}
	origin := manifest.Origin{Source: source}
	switch {
	case len(objects) == 0:
		return ms, nil
	case r == nil:
		// Said as a sentence of the file's errors.
		detail := "Kubernetes objects are not read here (no renderer)"
		return withoutKube(ms), &multierror.Error{Errors: []error{&manifest.Error{Origin: objects[0].Origin, Detail: detail, Err: ErrNoTranslator}}}
	case size > MaxKubeBytes:
		err := &manifest.Error{Origin: origin, Detail: fmt.Sprintf("the Kubernetes objects of the source hold more than %d bytes: %v", MaxKubeBytes, manifest.ErrTooLarge), Err: manifest.ErrTooLarge}
		return withoutKube(ms), &multierror.Error{Errors: []error{err}}
	}
	pods, err := r.Render(ctx, Bundle{Options: Options{Source: source}, Kube: objects})
	sealed := 0
	for i := range pods {
		sealPod(&pods[i], seal)
		for _, f := range pods[i].Manifest.Sealed {
			sealed += len(f.Data)
		}
	}
	if sealed > MaxSealedBytes {
		err := &manifest.Error{Origin: origin, Detail: fmt.Sprintf("the encrypted files the source's pods carry (a Secret's file for each pod that reads it, replicas counted) hold more than %d bytes: split the Secret, or read it from fewer pods: %v", MaxSealedBytes, manifest.ErrTooLarge), Err: manifest.ErrTooLarge}
		return withoutKube(ms), &multierror.Error{Errors: []error{err}}
	}
	if len(ms)-len(objects)+len(pods) > manifest.MaxSourceManifests {
		// Replicas count: 50 Deployments of 100 replicas are 5000 pods.
		return withoutKube(ms), &multierror.Error{Errors: []error{manifest.TooManyInSource(origin)}}
	}
	return placePods(ms, pods), err
}

// sealPod attaches the SOPS files translated pod p's encrypted values come
// from (seal), or, with no seal, makes each an error of p.
func sealPod(p *manifest.Sourced, seal func(*manifest.Sourced)) {
	if seal != nil {
		seal(p)
		return
	}
	const detail = "a SOPS-encrypted value: only a file or git source decrypts (a Secret encrypted with sops)"
	for field, value := range manifest.StringFields(p.Manifest) {
		if len(manifest.EncryptedValues(value)) > 0 {
			p.Errors = append(p.Errors, &manifest.Error{Origin: p.Origin, Pod: p.Manifest.ID, Field: p.Field(field), Detail: detail})
		}
	}
	for i, v := range p.Manifest.Volumes {
		if v.Files == nil {
			continue
		}
		for j, it := range v.Files.Items {
			if len(manifest.EncryptedValues(string(it.Data))) > 0 {
				field := p.Field(fmt.Sprintf("volumes[%d].files.items[%d]", i, j))
				p.Errors = append(p.Errors, &manifest.Error{Origin: p.Origin, Pod: p.Manifest.ID, Field: field, Detail: detail})
			}
		}
	}
}

// placePods puts each object's pods where the object was among ms.
func placePods(ms, pods []manifest.Sourced) []manifest.Sourced {
	byOrigin := map[manifest.Origin][]manifest.Sourced{}
	for _, p := range pods {
		byOrigin[p.Origin] = append(byOrigin[p.Origin], p)
	}
	out := make([]manifest.Sourced, 0, len(ms)+len(pods))
	for _, m := range ms {
		if m.Kube == nil {
			out = append(out, m)
			continue
		}
		out = append(out, byOrigin[m.Origin]...)
		delete(byOrigin, m.Origin)
	}
	return out
}

// withoutKube is ms without its Kubernetes objects.
func withoutKube(ms []manifest.Sourced) []manifest.Sourced {
	return slices.DeleteFunc(slices.Clone(ms), func(m manifest.Sourced) bool { return m.Kube != nil })
}
