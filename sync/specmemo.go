package sync

import (
	"reflect"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sync/podspec"
)

// specMemos remember, by pod, the spec hashes of the manifest a sync last
// planned and its redacted copy for the status, so that a sync finding the
// manifest unchanged does not compute them again: they were most of a
// no-op sync's own work (docs/performance.md, "No-op sync"). Only a sync
// pass touches them (passState).
type specMemos struct {
	byPod map[string]*specMemo
}

// specMemo is what a pod's manifest gave.
type specMemo struct {
	// of is the manifest the rest is of: a copy of the struct, sharing its
	// slices and maps with the desired set, which no one writes to once
	// it is set (SetDesired).
	of manifest.Manifest
	// hashes are manifest.ContainerHash of each of its containers.
	hashes []string
	// infra is manifest.InfraHash of it, made on first use ("" before).
	infra string
	// redacted is podspec.Redact of it, made on first use; the status
	// shares it and no one writes to it.
	redacted *manifest.Manifest
}

// of returns the memo of m, made anew unless the pod's last one is of an
// equal manifest. An equal manifest that shares its slices with the last
// one costs a comparison of the top-level fields; one read anew from a
// source, a comparison of the whole.
func (ms *specMemos) of(m manifest.Manifest) *specMemo {
	if sm := ms.byPod[m.ID]; sm != nil && reflect.DeepEqual(sm.of, m) {
		// Equal, perhaps read anew: keep the new one, so that the memo
		// holds on to no manifest of a desired set gone by.
		sm.of = m
		return sm
	}
	sm := &specMemo{of: m, hashes: make([]string, len(m.Containers))}
	for i := range m.Containers {
		sm.hashes[i] = manifest.ContainerHash(m, i)
	}
	if ms.byPod == nil {
		ms.byPod = map[string]*specMemo{}
	}
	ms.byPod[m.ID] = sm
	return sm
}

// containerHash is manifest.ContainerHash(m, i), from m's memo (made
// when missing) unless ms is nil.
func (ms *specMemos) containerHash(m manifest.Manifest, i int) string {
	if ms == nil {
		return manifest.ContainerHash(m, i)
	}
	return ms.of(m).hashes[i]
}

// containerHash is manifest.ContainerHash(m, i), from the memo when
// there is one (then m is the memo's manifest).
func (sm *specMemo) containerHash(m manifest.Manifest, i int) string {
	if sm == nil {
		return manifest.ContainerHash(m, i)
	}
	return sm.hashes[i]
}

// infraHash is manifest.InfraHash(m), from the memo when there is one
// (then m is the memo's manifest).
func (sm *specMemo) infraHash(m manifest.Manifest) string {
	if sm == nil {
		return manifest.InfraHash(m)
	}
	if sm.infra == "" {
		sm.infra = manifest.InfraHash(sm.of)
	}
	return sm.infra
}

// redactedWith returns the manifest with env values and file contents
// replaced by their hashes (podspec.Redact).
func (sm *specMemo) redactedWith(env *EnvHasher) *manifest.Manifest {
	if sm.redacted == nil {
		sm.redacted = podspec.Redact(sm.of, env)
	}
	return sm.redacted
}

// keepOnly forgets the memos of the pods not in pods.
func (ms *specMemos) keepOnly(pods []Pod) {
	if len(ms.byPod) <= len(pods) {
		present := 0
		for _, p := range pods {
			if ms.byPod[p.Manifest.ID] != nil {
				present++
			}
		}
		if present == len(ms.byPod) {
			return
		}
	}
	keep := make(map[string]bool, len(pods))
	for _, p := range pods {
		keep[p.Manifest.ID] = true
	}
	for id := range ms.byPod {
		if !keep[id] {
			delete(ms.byPod, id)
		}
	}
}
