//go:build faults

package faults

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
)

// genLabel is the pod label whose value the suite bumps to recreate a pod:
// pod labels are part of every container's spec hash (the infra
// container's too), so a new value recreates each container of the pod,
// and the label on a container says which version it runs.
const genLabel = "faults-gen"

// pod is one pod the suite wants: one container, or two sharing the
// infra container's network namespace.
type pod struct {
	ID  string
	Two bool
	Gen int
	// Named is the name its app container's manifest chooses
	// (containerName), "" for none.
	Named string
}

// slots are the io.hostlet.container values of the pod's containers.
func (p pod) slots() []string {
	if p.Two {
		return []string{"app", "side", "POD"}
	}
	return []string{"app"}
}

// manifest is the pod's manifest (JSON, which every source reads as YAML).
func (p pod) manifest(image string) map[string]any {
	containers := []map[string]any{{
		"name": "app", "image": image,
		"env": []map[string]string{{"name": "MESSAGE", "value": "pod " + p.ID + " gen " + strconv.Itoa(p.Gen)}},
	}}
	if p.Named != "" {
		containers[0]["containerName"] = p.Named
	}
	if p.Two {
		containers = append(containers, map[string]any{"name": "side", "image": image, "command": []string{"/demo", "pause"}})
	}
	return map[string]any{
		"version": "v1beta1", "id": p.ID,
		"labels":                        map[string]string{genLabel: strconv.Itoa(p.Gen)},
		"terminationGracePeriodSeconds": 2,
		"containers":                    containers,
	}
}

// model is what every source should hold: the desired state the checks
// compare the engine with.
type model struct {
	image string
	// order is the sources in config order; pods their pods by ID.
	order []string
	pods  map[string]map[string]pod
}

func newModel(image string, order []string) *model {
	m := &model{image: image, order: order, pods: map[string]map[string]pod{}}
	for _, s := range order {
		m.pods[s] = map[string]pod{}
	}
	return m
}

// desired is every pod of every source, by ID.
func (m *model) desired() map[string]pod {
	out := map[string]pod{}
	for _, s := range m.order {
		maps.Copy(out, m.pods[s])
	}
	return out
}

// clone returns a deep copy of the pods of source s.
func (m *model) clone(s string) map[string]pod {
	return maps.Clone(m.pods[s])
}

// list is the JSON list of the manifests of pods.
func (m *model) list(pods []pod) []byte {
	var ms []map[string]any
	for _, p := range pods {
		ms = append(ms, p.manifest(m.image))
	}
	if ms == nil {
		return []byte("[]")
	}
	b, err := json.MarshalIndent(ms, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("marshal manifests: %v", err))
	}
	return b
}

// file is one pod's manifest as a file's content.
func (m *model) file(p pod) []byte {
	b, err := json.MarshalIndent(p.manifest(m.image), "", "  ")
	if err != nil {
		panic(fmt.Sprintf("marshal manifest %s: %v", p.ID, err))
	}
	return b
}
