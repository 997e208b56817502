// Package validate checks manifests: the field rules of one manifest
// (Manifest) and the rules across an ordered set of sources (Set): duplicate
// IDs and host-port conflicts, decided deterministically by order. Every
// error is a *manifest.Error naming the origin, the pod and the field path;
// all errors are reported, not the first.
package validate
