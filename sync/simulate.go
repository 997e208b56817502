package sync

import (
	"strings"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// Simulate returns the containers that applying pods would leave on the
// engine, all running, as one list call would report them. `hostlet diff
// --against ref:REV` plans from the pods at REV to the pods now with it.
func Simulate(instance string, pods []Pod) []hruntime.Container {
	var out []hruntime.Container
	for _, p := range pods {
		infraID := ""
		if p.needsInfra() {
			spec := infraSpec(instance, "", nil, p)
			infraID = spec.Name
			out = append(out, simulated(spec))
		}
		for i := range p.Manifest.Containers {
			out = append(out, simulated(appSpec(instance, p, i, infraID)))
		}
	}
	return out
}

func simulated(spec hruntime.ContainerSpec) hruntime.Container {
	return hruntime.Container{ID: spec.Name, Name: spec.Name, Image: spec.Image, Labels: spec.Labels, State: hruntime.StateRunning}
}

// FromStatus rebuilds the containers a host reported in its status
// document, for `hostlet diff --against status`. Env values in the status
// are already hashes, so they are carried over as they are.
func FromStatus(instance string, pods []PodStatus) []hruntime.Container {
	var out []hruntime.Container
	for _, ps := range pods {
		if ps.Manifest == nil {
			continue
		}
		m := *ps.Manifest
		p := Pod{Manifest: m, Source: ps.Source, Revision: ps.Revision}
		if ps.InfraHash != "" {
			labels := baseLabels(instance, p, hruntime.InfraName, ps.InfraHash)
			out = append(out, hruntime.Container{ID: ps.ID + "/" + hruntime.InfraName, Labels: labels, State: hruntime.StateRunning})
		}
		for i, cs := range ps.Containers {
			if cs.State == "absent" || i >= len(m.Containers) {
				continue
			}
			labels := baseLabels(instance, p, cs.Name, cs.Hash)
			sum := summarize(m, i)
			for _, e := range m.Containers[i].Env {
				sum.Env[e.Name] = e.Value // already a hash
			}
			labels[LabelSpec] = sum.label()
			c := hruntime.Container{ID: cs.ContainerID, Image: cs.Image, Labels: labels, State: cs.State}
			if code, ok := strings.CutPrefix(cs.LastError, "exited ("); ok {
				c.ExitCode = atoiPrefix(code)
			}
			out = append(out, c)
		}
	}
	return out
}

func atoiPrefix(s string) int {
	n, neg := 0, false
	for i, r := range s {
		if i == 0 && r == '-' {
			neg = true
			continue
		}
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	if neg {
		return -n
	}
	return n
}

// imageChange renders an image change, shortening the new image to its tag
// or digest when the repository stays the same.
func imageChange(old, new string) string {
	oldRepo, _ := splitImage(old)
	newRepo, newRef := splitImage(new)
	if oldRepo == newRepo && newRef != "" {
		return "image " + old + " -> " + newRef
	}
	return "image " + old + " -> " + new
}

// splitImage splits "repo:tag" or "repo@digest"; a port in the registry
// host is not a tag.
func splitImage(ref string) (repo, tagOrDigest string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}
