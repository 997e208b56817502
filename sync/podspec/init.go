package podspec

import (
	"strings"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// InitSlotPrefix starts the slot (io.hostlet.container) of an init
// container, its name after it. A container's name is a DNS label, so no
// app container's slot has a dot.
const InitSlotPrefix = "init."

// InitSlot is the slot of the init container named name.
func InitSlot(name string) string { return InitSlotPrefix + name }

// IsInitSlot reports whether slot is an init container's.
func IsInitSlot(slot string) bool { return strings.HasPrefix(slot, InitSlotPrefix) }

// InitGeneration names the run of p's init containers that the app
// containers of this version of p, in the network namespace of infra
// container infraID, need: a new version of the pod (any container's
// hash) or a new infra container needs a run of its own.
func InitGeneration(p Pod, infraID string) string {
	return manifest.HashVersion + ":" + shortSum(manifest.PodHash(p.Manifest), infraID)
}

// Init is the spec of init container j of pod p for the run gen
// (InitGeneration), in the network namespace of infra container infraID:
// as an app container's (App) with the init container's slot, labelled
// with gen instead of a spec hash, never restarted by the engine. Its
// files, host paths and data folders are bound as an app container's,
// with InitPod's manifest.
func Init(instance string, p Pod, j int, infraID, gen string, env *EnvHasher) hruntime.ContainerSpec {
	slot := InitSlot(p.Manifest.InitContainers[j].Name)
	spec := App(instance, InitPod(p, j), 0, infraID, env)
	spec.Name = hruntime.ContainerName(instance, p.Manifest.ID, slot, gen)
	spec.Labels[hruntime.LabelContainer] = slot
	spec.Labels[hruntime.LabelHash] = gen
	spec.RestartPolicy = "no"
	return spec
}

// InitPod is p with init container j as its only container, for the
// functions that take a manifest and a container's index.
func InitPod(p Pod, j int) Pod {
	q := p
	q.Manifest.Containers = []manifest.Container{p.Manifest.InitContainers[j]}
	return q
}
