package manifest

import (
	"maps"
	"slices"
	"strings"

	"github.com/distribution/reference"
)

// WithDefaults returns a deep copy of m with every default written out:
// restart policy, grace period, pull policy, port protocol (upper case),
// probe settings, capability names (upper case, no CAP_), security
// options (key=value), a device's
// container path and permissions, and on the host's network a port's
// host port (its container port). An omitted field and its default written out give equal
// results, so they hash the same.
func (m Manifest) WithDefaults() Manifest {
	out := m.Clone()
	if out.RestartPolicy == "" {
		out.RestartPolicy = RestartAlways
	}
	if out.TerminationGracePeriodSeconds == 0 {
		out.TerminationGracePeriodSeconds = DefaultGracePeriodSeconds
	}
	if out.MinReadySeconds == 0 {
		out.MinReadySeconds = DefaultMinReadySeconds
	}
	if out.ProgressDeadlineSeconds == 0 {
		out.ProgressDeadlineSeconds = DefaultProgressDeadlineSeconds
	}
	if out.Rollback == "" {
		out.Rollback = RollbackAuto
	}
	if out.FSGroup != nil && out.FSGroupChangePolicy == "" {
		out.FSGroupChangePolicy = FSGroupChangeAlways
	}
	for i := range out.Containers {
		containerDefaults(&out.Containers[i], out.HostNetwork)
	}
	for i := range out.InitContainers {
		containerDefaults(&out.InitContainers[i], out.HostNetwork)
	}
	return out
}

// containerDefaults writes out c's defaults (see WithDefaults); on the
// host's network (hostNetwork) a port's host port is its container port.
func containerDefaults(c *Container, hostNetwork bool) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = DefaultPullPolicy(c.Image)
	}
	for j := range c.Ports {
		p := &c.Ports[j]
		p.Protocol = strings.ToUpper(p.Protocol)
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
		if hostNetwork && p.HostPort == 0 {
			p.HostPort = p.ContainerPort
		}
	}
	for _, caps := range [][]string{c.CapAdd, c.CapDrop} {
		for j, name := range caps {
			caps[j] = CapabilityName(name)
		}
	}
	for j, o := range c.SecurityOpt {
		c.SecurityOpt[j] = SecurityOpt(o)
	}
	for j := range c.Devices {
		d := &c.Devices[j]
		if d.ContainerPath == "" {
			d.ContainerPath = d.HostPath
		}
		if d.Permissions == "" {
			d.Permissions = "rwm"
		}
	}
	for _, pr := range []*Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		if pr.PeriodSeconds == 0 {
			pr.PeriodSeconds = DefaultProbePeriodSeconds
		}
		if pr.TimeoutSeconds == 0 {
			pr.TimeoutSeconds = DefaultProbeTimeoutSeconds
		}
		if pr.FailureThreshold == 0 {
			pr.FailureThreshold = DefaultProbeFailureThreshold
		}
		if pr.HTTPGet != nil && pr.HTTPGet.Path == "" {
			pr.HTTPGet.Path = "/"
		}
	}
}

// CapabilityName is a capability's name as hostlet writes it: upper case,
// without the CAP_ prefix (net_admin and CAP_NET_ADMIN are NET_ADMIN).
func CapabilityName(name string) string {
	return strings.TrimPrefix(strings.ToUpper(name), "CAP_")
}

// SecurityOpt is a security option in Docker's current form: the legacy
// key:value (seccomp:unconfined) written key=value.
func SecurityOpt(o string) string {
	if !strings.Contains(o, "=") {
		if k, v, ok := strings.Cut(o, ":"); ok {
			return k + "=" + v
		}
	}
	return o
}

// DefaultPullPolicy is Always for an untagged or :latest image and
// IfNotPresent otherwise (digests included), as in Kubernetes.
func DefaultPullPolicy(image string) string {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return PullIfNotPresent
	}
	if _, ok := ref.(reference.Digested); ok {
		return PullIfNotPresent
	}
	if t, ok := ref.(reference.Tagged); ok && t.Tag() != "latest" {
		return PullIfNotPresent
	}
	return PullAlways
}

// Clone returns a deep copy of m.
func (m Manifest) Clone() Manifest {
	out := m
	out.NodeSelector = maps.Clone(m.NodeSelector)
	if m.Object != nil {
		o := *m.Object
		o.Annotations = maps.Clone(o.Annotations)
		out.Object = &o
	}
	if m.Labels != nil {
		out.Labels = make(map[string]string, len(m.Labels))
		for k, v := range m.Labels {
			out.Labels[k] = v
		}
	}
	out.Volumes = append([]Volume(nil), m.Volumes...)
	if m.FSGroup != nil {
		g := *m.FSGroup
		out.FSGroup = &g
	}
	out.DependsOn = append([]Dependency(nil), m.DependsOn...)
	out.ExtraHosts = append([]string(nil), m.ExtraHosts...)
	out.DNS = append([]string(nil), m.DNS...)
	out.DNSSearch = append([]string(nil), m.DNSSearch...)
	if m.Networks != nil {
		out.Networks = make([]Network, len(m.Networks))
		for i, n := range m.Networks {
			n.Aliases = append([]string(nil), n.Aliases...)
			n.DriverOptions = maps.Clone(n.DriverOptions)
			out.Networks[i] = n
		}
	}
	out.Containers = cloneContainers(m.Containers)
	if m.InitContainers != nil {
		out.InitContainers = cloneContainers(m.InitContainers)
	}
	return out
}

// cloneContainers returns a deep copy of cs.
func cloneContainers(cs []Container) []Container {
	out := make([]Container, len(cs))
	for i, c := range cs {
		c.Command = append([]string(nil), c.Command...)
		c.Args = append([]string(nil), c.Args...)
		c.Env = append([]EnvVar(nil), c.Env...)
		c.Ports = append([]Port(nil), c.Ports...)
		c.VolumeMounts = append([]VolumeMount(nil), c.VolumeMounts...)
		c.CapAdd = append([]string(nil), c.CapAdd...)
		c.CapDrop = append([]string(nil), c.CapDrop...)
		c.Devices = append([]Device(nil), c.Devices...)
		c.SecurityOpt = append([]string(nil), c.SecurityOpt...)
		c.Ulimits = append([]Ulimit(nil), c.Ulimits...)
		c.Tmpfs = append([]Tmpfs(nil), c.Tmpfs...)
		c.GroupAdd = append([]string(nil), c.GroupAdd...)
		c.Sysctls = maps.Clone(c.Sysctls)
		if c.Logging != nil {
			l := Logging{Driver: c.Logging.Driver, Options: maps.Clone(c.Logging.Options)}
			c.Logging = &l
		}
		if c.Healthcheck != nil {
			h := *c.Healthcheck
			h.Command = append([]string(nil), h.Command...)
			c.Healthcheck = &h
		}
		c.LivenessProbe = c.LivenessProbe.clone()
		c.ReadinessProbe = c.ReadinessProbe.clone()
		c.StartupProbe = c.StartupProbe.clone()
		c.Lifecycle = c.Lifecycle.clone()
		if c.Build != nil {
			// Files is immutable and shared, as a volume's is.
			b := *c.Build
			b.Args, b.Labels = maps.Clone(b.Args), maps.Clone(b.Labels)
			b.ExtraHosts = append([]string(nil), b.ExtraHosts...)
			c.Build = &b
		}
		out[i] = c
	}
	return out
}

// clone returns a deep copy of p (nil for nil).
func (p *Probe) clone() *Probe {
	if p == nil {
		return nil
	}
	c := *p
	if p.HTTPGet != nil {
		h := *p.HTTPGet
		h.HTTPHeaders = append([]HTTPHeader(nil), h.HTTPHeaders...)
		c.HTTPGet = &h
	}
	if p.TCPSocket != nil {
		t := *p.TCPSocket
		c.TCPSocket = &t
	}
	if p.Exec != nil {
		e := Exec{Command: append([]string(nil), p.Exec.Command...)}
		c.Exec = &e
	}
	if p.GRPC != nil {
		g := *p.GRPC
		c.GRPC = &g
	}
	return &c
}

// Volume returns the pod volume with the given name.
func (m *Manifest) Volume(name string) (Volume, bool) {
	for _, v := range m.Volumes {
		if v.Name == name {
			return v, true
		}
	}
	return Volume{}, false
}

// clone is a deep copy of l (nil for nil).
func (l *Lifecycle) clone() *Lifecycle {
	if l == nil {
		return nil
	}
	return &Lifecycle{PostStart: l.PostStart.clone(), PreStop: l.PreStop.clone()}
}

// clone is a deep copy of h (nil for nil).
func (h *Hook) clone() *Hook {
	if h == nil {
		return nil
	}
	out := &Hook{SleepSeconds: h.SleepSeconds}
	if h.Exec != nil {
		out.Exec = &Exec{Command: slices.Clone(h.Exec.Command)}
	}
	if h.HTTPGet != nil {
		g := *h.HTTPGet
		g.HTTPHeaders = slices.Clone(g.HTTPHeaders)
		out.HTTPGet = &g
	}
	return out
}
