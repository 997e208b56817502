package kube

import "strings"

// typeRules are the rules of every object's apiVersion and kind.
var typeRules = map[string]rule{"apiVersion": yes, "kind": yes, "metadata": yes}

// podTemplateRule is the rule of a field path pattern of a pod template
// (a Pod's own fields, a workload's spec.template).
func podTemplateRule(p string) (rule, bool) {
	if r, ok := typeRules[p]; ok {
		return r, true
	}
	if rest, ok := strings.CutPrefix(p, "metadata."); ok {
		r, ok := metaRules[rest]
		return r, ok
	}
	if p == "spec" {
		return yes, true
	}
	if rest, ok := strings.CutPrefix(p, "spec.containers[]."); ok {
		return containerRule(rest)
	}
	if rest, ok := strings.CutPrefix(p, "spec.initContainers[]."); ok {
		return initContainerRule(rest)
	}
	if rest, ok := strings.CutPrefix(p, "spec.volumes[]."); ok {
		return volumeRule(rest)
	}
	r, ok := podRules[p]
	return r, ok
}

// containerRule is the rule of a field of a container.
func containerRule(p string) (rule, bool) {
	for _, hook := range []string{"lifecycle.postStart.", "lifecycle.preStop."} {
		if rest, ok := strings.CutPrefix(p, hook); ok {
			r, ok := hookRules[rest]
			return r, ok
		}
	}
	for _, probe := range []string{"livenessProbe.", "readinessProbe.", "startupProbe."} {
		if rest, ok := strings.CutPrefix(p, probe); ok {
			r, ok := probeRules[rest]
			return r, ok
		}
	}
	r, ok := containerRules[p]
	return r, ok
}

// initContainerRule is the rule of a field of an init container: an app
// container's, but for what runs beside the app (ports, probes, hooks).
func initContainerRule(p string) (rule, bool) {
	top, _, _ := strings.Cut(p, ".")
	top, _, _ = strings.Cut(top, "[")
	if r, ok := initContainerRules[top]; ok {
		return r, true
	}
	return containerRule(p)
}

// volumeRule is the rule of a field of a pod volume, its items' too.
func volumeRule(p string) (rule, bool) {
	if source, item, ok := strings.Cut(p, ".items[]."); ok {
		switch source {
		case "configMap", "secret", "projected.sources[].configMap", "projected.sources[].secret":
			r, ok := keyToPathRules[item]
			return r, ok
		case "downwardAPI", "projected.sources[].downwardAPI":
			r, ok := downwardFileRules[item]
			return r, ok
		}
		return rule{}, false
	}
	r, ok := volumeRules[p]
	return r, ok
}

// objectRules returns the rules of an object of kind.
func objectRules(kind string) func(string) (rule, bool) {
	own := workloadRules[kind]
	if own == nil {
		own = dataRules[kind]
	}
	return func(p string) (rule, bool) {
		if r, ok := own[p]; ok {
			return r, true
		}
		if kind == "Pod" {
			return podTemplateRule(p)
		}
		if rest, ok := strings.CutPrefix(p, "spec.template."); ok {
			return podTemplateRule(rest)
		}
		if r, ok := typeRules[p]; ok {
			return r, true
		}
		if rest, ok := strings.CutPrefix(p, "metadata."); ok {
			r, ok := metaRules[rest]
			return r, ok
		}
		if p == "spec" {
			return yes, own != nil
		}
		return rule{}, false
	}
}
