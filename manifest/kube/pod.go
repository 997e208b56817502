package kube

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/hostlet/hostlet/manifest"
)

// defaultGracePeriod is Kubernetes' terminationGracePeriodSeconds when a
// pod sets none (hostlet's own default is shorter).
const defaultGracePeriod = 30

// podTranslation is the translation of one pod of a workload.
type podTranslation struct {
	data      map[dataKey]object
	shared    *shared
	object    object
	origin    manifest.Origin
	id        string
	name      string // the pod's metadata.name, as fieldRef reads it
	namespace string
	prefix    string // of the template's fields in the object
	labels    map[string]string
	annots    map[string]string
	volumes   map[string]*podVolume
	notes     []*manifest.Error
	errs      []*manifest.Error
	// keys name the pod's fields by the object's (Sourced.Keys).
	keys map[string]string
	// containers are the template's, for resourceFieldRef.
	containers []corev1.Container
	// expanded counts the bytes $(VAR) references added to the pod's
	// values (MaxExpandedBytes bounds them).
	expanded int
	// subPaths counts the volumes subPath mounts made; taken are the
	// pod's volume names (newVolumeName).
	subPaths int
	taken    map[string]bool
}

// podKeys are the object's names of the pod's own fields, below the pod
// template.
var podKeys = map[string]string{
	"id":                            "metadata.name",
	"labels":                        "metadata.labels",
	"restartPolicy":                 "spec.restartPolicy",
	"terminationGracePeriodSeconds": "spec.terminationGracePeriodSeconds",
	"hostname":                      "spec.hostname",
	"extraHosts":                    "spec.hostAliases",
	"dns":                           "spec.dnsConfig.nameservers",
	"dnsSearch":                     "spec.dnsConfig.searches",
	"hostNetwork":                   "spec.hostNetwork",
	"hostPID":                       "spec.hostPID",
	"hostIPC":                       "spec.hostIPC",
	"containers":                    "spec.containers",
	"initContainers":                "spec.initContainers",
	"nodeSelector":                  "spec.nodeSelector",
}

// nameField names field of the pod by the object's field.
func (p *podTranslation) nameField(field, objectField string) {
	if p.keys == nil {
		p.keys = map[string]string{}
		for k, v := range podKeys {
			p.keys[k] = p.prefix + v
		}
	}
	p.keys[field] = p.prefix + objectField
}

// errorf adds an error of the pod's field (a path in the template).
func (p *podTranslation) errorf(field, format string, args ...any) {
	p.errs = append(p.errs, &manifest.Error{Origin: p.origin, Pod: p.id, Field: p.prefix + field, Detail: fmt.Sprintf(format, args...)})
}

// note adds a note of the pod's field.
func (p *podTranslation) note(field, format string, args ...any) {
	p.notes = append(p.notes, &manifest.Error{Origin: p.origin, Pod: p.id, Field: p.prefix + field, Detail: fmt.Sprintf(format, args...)})
}

// translate makes the pod of template t, adding what is wrong with it to
// p.errs.
func (p *podTranslation) translate(t *corev1.PodTemplateSpec) manifest.Manifest {
	spec := &t.Spec
	p.labels, p.annots, p.containers = t.Labels, t.Annotations, spec.Containers
	m := manifest.Manifest{
		Version:       manifest.Version,
		ID:            p.id,
		Labels:        maps.Clone(t.Labels),
		RestartPolicy: string(spec.RestartPolicy),
		HostNetwork:   spec.HostNetwork,
		HostPID:       spec.HostPID,
		HostIPC:       spec.HostIPC,
		Hostname:      spec.Hostname,
		NodeSelector:  maps.Clone(spec.NodeSelector),
	}
	m.TerminationGracePeriodSeconds = defaultGracePeriod
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		m.TerminationGracePeriodSeconds = *g
	}
	if m.TerminationGracePeriodSeconds == 0 {
		// Kubernetes' 0 is "at once"; hostlet's 0 is its default.
		m.TerminationGracePeriodSeconds = 1
		p.note("spec.terminationGracePeriodSeconds", "0 is 1 second here: the engine's shortest stop timeout")
	}
	if a := spec.AutomountServiceAccountToken; a != nil && *a {
		p.errorf("spec.automountServiceAccountToken", "true: %s", noService)
	}
	p.dns(&m, spec)
	p.volumes = p.podVolumes(&m, spec.Volumes)
	sec := p.podSecurity(spec.SecurityContext)
	p.fsGroup(&m, spec.SecurityContext)
	for i := range spec.Containers {
		c := p.container(&m, fmt.Sprintf("spec.containers[%d]", i), &spec.Containers[i], sec)
		m.Containers = append(m.Containers, c)
	}
	for i := range spec.InitContainers {
		c := p.container(&m, fmt.Sprintf("spec.initContainers[%d]", i), &spec.InitContainers[i], sec)
		m.InitContainers = append(m.InitContainers, c)
	}
	p.memoryVolumes(spec, m.FSGroup != nil)
	return m
}

// dns translates the pod's names and resolver settings.
func (p *podTranslation) dns(m *manifest.Manifest, spec *corev1.PodSpec) {
	for i, a := range spec.HostAliases {
		for _, h := range a.Hostnames {
			m.ExtraHosts = append(m.ExtraHosts, h+":"+a.IP)
		}
		if len(a.Hostnames) == 0 {
			p.errorf(fmt.Sprintf("spec.hostAliases[%d].hostnames", i), "required: the names of %s", a.IP)
		}
	}
	if c := spec.DNSConfig; c != nil {
		m.DNS, m.DNSSearch = slices.Clone(c.Nameservers), slices.Clone(c.Searches)
	}
	switch spec.DNSPolicy {
	case "", corev1.DNSDefault:
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		p.note("spec.dnsPolicy", "%s: there is no cluster DNS on a single host; the pod resolves as with Default (the engine's resolver)", spec.DNSPolicy)
	case corev1.DNSNone:
		if spec.DNSConfig == nil || len(spec.DNSConfig.Nameservers) == 0 {
			p.errorf("spec.dnsConfig.nameservers", "required with dnsPolicy None")
		}
	default:
		p.errorf("spec.dnsPolicy", "%q is not one of Default, None, ClusterFirst, ClusterFirstWithHostNet", spec.DNSPolicy)
	}
}

// fsGroup translates the pod's fsGroup and its change policy, which
// means nothing without it (Kubernetes ignores it then: noted).
func (p *podTranslation) fsGroup(m *manifest.Manifest, sc *corev1.PodSecurityContext) {
	if sc == nil {
		return
	}
	if sc.FSGroup != nil {
		g := *sc.FSGroup
		m.FSGroup = &g
		p.nameField("fsGroup", "spec.securityContext.fsGroup")
	}
	if sc.FSGroupChangePolicy == nil {
		return
	}
	if sc.FSGroup == nil {
		p.note("spec.securityContext.fsGroupChangePolicy", "without fsGroup no volume's ownership is changed: nothing to do")
		return
	}
	m.FSGroupChangePolicy = string(*sc.FSGroupChangePolicy)
	p.nameField("fsGroupChangePolicy", "spec.securityContext.fsGroupChangePolicy")
}

// podSecurity is the pod's security context as its containers' default.
type podSecurity struct {
	runAsUser, runAsGroup *int64
	runAsNonRoot          *bool
	groups                []string
	sysctls               map[string]string
	seccomp               *corev1.SeccompProfile
}

func (p *podTranslation) podSecurity(sc *corev1.PodSecurityContext) podSecurity {
	if sc == nil {
		return podSecurity{}
	}
	out := podSecurity{runAsUser: sc.RunAsUser, runAsGroup: sc.RunAsGroup, runAsNonRoot: sc.RunAsNonRoot, seccomp: sc.SeccompProfile}
	for _, g := range sc.SupplementalGroups {
		out.groups = append(out.groups, strconv.FormatInt(g, 10))
	}
	for i, s := range sc.Sysctls {
		if out.sysctls == nil {
			out.sysctls = map[string]string{}
		}
		if _, dup := out.sysctls[s.Name]; dup {
			p.errorf(fmt.Sprintf("spec.securityContext.sysctls[%d].name", i), "%q is given twice", s.Name)
		}
		out.sysctls[s.Name] = s.Value
	}
	return out
}

// security translates a container's security context over the pod's.
func (p *podTranslation) security(c *manifest.Container, field string, sc *corev1.SecurityContext, pod podSecurity) {
	user, group, nonRoot, seccomp := pod.runAsUser, pod.runAsGroup, pod.runAsNonRoot, pod.seccomp
	if sc != nil {
		user = cmpOr(sc.RunAsUser, user)
		group = cmpOr(sc.RunAsGroup, group)
		nonRoot = cmpOr(sc.RunAsNonRoot, nonRoot)
		seccomp = cmpOr(sc.SeccompProfile, seccomp)
		if sc.Capabilities != nil {
			for _, a := range sc.Capabilities.Add {
				c.CapAdd = append(c.CapAdd, string(a))
			}
			for _, d := range sc.Capabilities.Drop {
				c.CapDrop = append(c.CapDrop, string(d))
			}
		}
		c.Privileged = sc.Privileged != nil && *sc.Privileged
		c.ReadOnly = sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem
		if e := sc.AllowPrivilegeEscalation; e != nil && !*e {
			c.SecurityOpt = append(c.SecurityOpt, "no-new-privileges")
		}
	}
	switch {
	case user != nil && group != nil:
		c.User = fmt.Sprintf("%d:%d", *user, *group)
	case user != nil:
		c.User = strconv.FormatInt(*user, 10)
	case group != nil:
		p.errorf(field+".securityContext.runAsGroup", "not supported by hostlet yet without runAsUser (the engine sets a group only with a user)")
	}
	if nonRoot != nil && *nonRoot {
		// Without runAsUser, the image's USER is checked when the
		// container is created, as the kubelet does.
		c.RunAsNonRoot = true
		if user != nil && *user == 0 {
			p.errorf(field+".securityContext.runAsNonRoot", "true, but runAsUser is 0 (root)")
		}
	}
	if seccomp != nil {
		switch seccomp.Type {
		case corev1.SeccompProfileTypeRuntimeDefault:
		case corev1.SeccompProfileTypeUnconfined:
			c.SecurityOpt = append(c.SecurityOpt, "seccomp=unconfined")
		default:
			p.errorf(field+".securityContext.seccompProfile.type", "%q: not supported by hostlet yet (RuntimeDefault and Unconfined are)", seccomp.Type)
		}
	}
	c.GroupAdd = slices.Clone(pod.groups)
	c.Sysctls = maps.Clone(pod.sysctls)
}

// cmpOr is a if it is set, else b.
func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// keyMap is the pod's Sourced.Keys.
func (p *podTranslation) keyMap() map[string]string {
	if p.keys == nil {
		p.nameField("containers", "spec.containers")
	}
	return p.keys
}
