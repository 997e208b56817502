package manifest

import (
	"slices"
	"strings"
)

// DependencyCycles names, for every pod on a cycle of dependsOn in deps
// (pod id -> the ids it depends on), the cycle ("a -> b -> a"): such pods
// would wait for each other forever. The result does not depend on map
// order for pods on one cycle.
func DependencyCycles(deps map[string][]string) map[string]string {
	out := map[string]string{}
	const (
		visiting = 1
		done     = 2
	)
	state := map[string]int{}
	var stack []string
	var visit func(id string)
	visit = func(id string) {
		state[id] = visiting
		stack = append(stack, id)
		for _, next := range deps[id] {
			switch state[next] {
			case visiting:
				i := slices.Index(stack, next)
				cycle := strings.Join(append(append([]string(nil), stack[i:]...), next), " -> ")
				for _, p := range stack[i:] {
					out[p] = cycle
				}
			case 0:
				visit(next)
			}
		}
		stack = stack[:len(stack)-1]
		state[id] = done
	}
	ids := make([]string, 0, len(deps))
	for id := range deps {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if state[id] == 0 {
			visit(id)
		}
	}
	return out
}

// Dependencies are the pods m waits for: its dependsOn, and the pod
// whose network it joins (NetworkOf), to be started, unless dependsOn
// names that pod already.
func (m Manifest) Dependencies() []Dependency {
	if m.NetworkOf == "" || slices.ContainsFunc(m.DependsOn, func(d Dependency) bool { return d.Pod == m.NetworkOf }) {
		return m.DependsOn
	}
	return append(slices.Clip(m.DependsOn), Dependency{Pod: m.NetworkOf, Condition: DependencyStarted})
}
