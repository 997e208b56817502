package sync

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// Simulate returns the containers that applying pods would leave on the
// engine, all running, as one list call would report them, env values
// hashed with env. `hostlet diff --against ref:REV` plans from the pods at
// REV to the pods now with it (and the same hasher).
func Simulate(instance string, pods []Pod, env *EnvHasher) []hruntime.Container {
	var out []hruntime.Container
	of := map[string]string{}
	for _, p := range pods {
		infraID := ""
		if p.NeedsInfra() {
			spec := podspec.Infra(instance, "", nil, p)
			infraID = spec.Name
			out = append(out, simulated(spec))
		}
		if p.Manifest.NetworkOf != "" {
			of[p.Manifest.ID] = p.Manifest.NetworkOf
		}
		for i := range p.Manifest.Containers {
			out = append(out, simulated(podspec.App(instance, p, i, infraID, env)))
		}
	}
	return withJoinedNetworks(out, of)
}

// simulated is the container spec makes, under the name its manifest
// chose if any.
func simulated(spec hruntime.ContainerSpec) hruntime.Container {
	name := cmp.Or(spec.Labels[hruntime.LabelName], spec.Name)
	return hruntime.Container{ID: spec.Name, Name: name, Image: spec.Image, Labels: spec.Labels, State: hruntime.StateRunning}
}

// FromStatus rebuilds the containers a host reported in its status
// document, for `hostlet diff --against status`. Env values in the status
// are already hashes (made with the host's key), so they are carried over
// as they are: they compare with the desired side's only when that side
// hashes with the same key.
func FromStatus(instance string, pods []PodStatus) []hruntime.Container {
	var out []hruntime.Container
	for _, ps := range pods {
		if ps.Manifest == nil {
			continue
		}
		m := *ps.Manifest
		p := Pod{Manifest: m, Source: ps.Source, Revision: ps.Revision}
		if ps.InfraHash != "" {
			labels := podspec.BaseLabels(instance, p, hruntime.InfraName, ps.InfraHash)
			out = append(out, hruntime.Container{ID: ps.ID + "/" + hruntime.InfraName, Labels: labels, State: hruntime.StateRunning})
		}
		for i, cs := range ps.Containers {
			if cs.State == "absent" || i >= len(m.Containers) {
				continue
			}
			labels := podspec.BaseLabels(instance, p, cs.Name, cs.Hash)
			sum := podspec.Summarize(m, i, nil)
			for _, e := range m.Containers[i].Env {
				sum.Env[e.Name] = e.Value // already a hash
			}
			labels[LabelSpec] = sum.Label()
			c := hruntime.Container{ID: cs.ContainerID, Image: cs.Image, Labels: labels, State: cs.State}
			if chosen := m.Containers[i].ContainerName; chosen != "" {
				c.Labels[hruntime.LabelName], c.Name = chosen, chosen
			}
			if code, ok := strings.CutPrefix(cs.LastError, "exited ("); ok {
				c.ExitCode = atoiPrefix(code)
			}
			out = append(out, c)
		}
	}
	of := map[string]string{}
	for _, ps := range pods {
		if ps.Manifest != nil && ps.Manifest.NetworkOf != "" {
			of[ps.ID] = ps.Manifest.NetworkOf
		}
	}
	return withJoinedNetworks(out, of)
}

// withJoinedNetworks labels the app containers in out of the pods of of
// (pod → the pod whose network it joins) with the container holding that
// network in out, as the engine's are labelled when they join it.
func withJoinedNetworks(out []hruntime.Container, of map[string]string) []hruntime.Container {
	holders := joinedHolders(out, of)
	for i, c := range out {
		if h, ok := holders[c.Pod()]; ok && c.Slot() != hruntime.InfraName {
			labels := maps.Clone(c.Labels)
			labels[podspec.LabelNetworkOf] = h.ID
			out[i].Labels = labels
		}
	}
	return out
}

// AppliedPod is what the containers of one pod tell about the manifest
// they were made from.
type AppliedPod struct {
	Source   string
	Revision string
	// Manifest holds the pod's ID and its containers' names, images,
	// ports and chosen names (in slot order): enough to weigh it against
	// other pods for duplicate IDs, host ports and container names, not
	// to recreate it.
	Manifest manifest.Manifest
}

// Applied rebuilds the applied version of every pod from containers as one
// list call returns them (or as Simulate and FromStatus make them). The
// merge of sources keeps a rejected manifest's last good version when it
// still fits next to the other pods; `hostlet diff` weighs the running
// version the same way.
func Applied(actual []hruntime.Container) map[string]AppliedPod {
	out := map[string]AppliedPod{}
	cs := slices.Clone(podContainers(actual))
	sortContainers(cs)
	seen := map[string]bool{}
	for _, c := range cs {
		id := c.Pod()
		ap, ok := out[id]
		if !ok {
			ap = AppliedPod{Source: c.Labels[hruntime.LabelSource], Revision: c.Labels[hruntime.LabelRevision],
				Manifest: manifest.Manifest{Version: manifest.Version, ID: id}}
		}
		slot := c.Slot()
		if slot != hruntime.InfraName && !seen[id+"/"+slot] {
			seen[id+"/"+slot] = true
			mc := manifest.Container{Name: slot, Image: c.Image, ContainerName: c.Labels[hruntime.LabelName]}
			if sum, ok := podspec.ParseSummary(c.Labels[LabelSpec]); ok {
				mc.Image = sum.Image
				ap.Manifest.RestartPolicy = sum.RestartPolicy
				for _, p := range sum.Ports {
					if port, ok := parsePort(p); ok {
						mc.Ports = append(mc.Ports, port)
					}
				}
			}
			ap.Manifest.Containers = append(ap.Manifest.Containers, mc)
		}
		out[id] = ap
	}
	return out
}

// parsePort reads back what portString wrote: "8080/TCP",
// "9100->8080/TCP" or "127.0.0.1:9100->8080/TCP".
func parsePort(s string) (manifest.Port, bool) {
	var p manifest.Port
	host, cport, published := strings.Cut(s, "->")
	if !published {
		cport, host = host, ""
	}
	num, proto, ok := strings.Cut(cport, "/")
	if !ok {
		return p, false
	}
	var err error
	if p.ContainerPort, err = strconv.Atoi(num); err != nil {
		return p, false
	}
	p.Protocol = proto
	if host != "" {
		if i := strings.LastIndex(host, ":"); i >= 0 {
			p.HostIP, host = host[:i], host[i+1:]
		}
		if p.HostPort, err = strconv.Atoi(host); err != nil {
			return p, false
		}
	}
	return p, true
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
