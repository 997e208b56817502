package manifest

import (
	"strings"

	"github.com/distribution/reference"
)

// WithDefaults returns a deep copy of m with every default written out:
// restart policy, grace period, pull policy, port protocol (upper case) and
// probe settings. An omitted field and its default written out give equal
// results, so they hash the same.
func (m Manifest) WithDefaults() Manifest {
	out := m.Clone()
	if out.RestartPolicy == "" {
		out.RestartPolicy = RestartAlways
	}
	if out.TerminationGracePeriodSeconds == 0 {
		out.TerminationGracePeriodSeconds = DefaultGracePeriodSeconds
	}
	for i := range out.Containers {
		c := &out.Containers[i]
		if c.ImagePullPolicy == "" {
			c.ImagePullPolicy = DefaultPullPolicy(c.Image)
		}
		for j := range c.Ports {
			p := &c.Ports[j]
			p.Protocol = strings.ToUpper(p.Protocol)
			if p.Protocol == "" {
				p.Protocol = "TCP"
			}
		}
		if pr := c.LivenessProbe; pr != nil {
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
	return out
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
	if m.Labels != nil {
		out.Labels = make(map[string]string, len(m.Labels))
		for k, v := range m.Labels {
			out.Labels[k] = v
		}
	}
	out.Volumes = append([]Volume(nil), m.Volumes...)
	out.DependsOn = append([]Dependency(nil), m.DependsOn...)
	out.ExtraHosts = append([]string(nil), m.ExtraHosts...)
	out.DNS = append([]string(nil), m.DNS...)
	out.DNSSearch = append([]string(nil), m.DNSSearch...)
	if m.Networks != nil {
		out.Networks = make([]Network, len(m.Networks))
		for i, n := range m.Networks {
			n.Aliases = append([]string(nil), n.Aliases...)
			out.Networks[i] = n
		}
	}
	out.Containers = make([]Container, len(m.Containers))
	for i, c := range m.Containers {
		c.Command = append([]string(nil), c.Command...)
		c.Args = append([]string(nil), c.Args...)
		c.Env = append([]EnvVar(nil), c.Env...)
		c.Ports = append([]Port(nil), c.Ports...)
		c.VolumeMounts = append([]VolumeMount(nil), c.VolumeMounts...)
		if c.Healthcheck != nil {
			h := *c.Healthcheck
			h.Command = append([]string(nil), h.Command...)
			c.Healthcheck = &h
		}
		if c.LivenessProbe != nil {
			p := *c.LivenessProbe
			if p.HTTPGet != nil {
				h := *p.HTTPGet
				p.HTTPGet = &h
			}
			if p.TCPSocket != nil {
				t := *p.TCPSocket
				p.TCPSocket = &t
			}
			if p.Exec != nil {
				e := Exec{Command: append([]string(nil), p.Exec.Command...)}
				p.Exec = &e
			}
			c.LivenessProbe = &p
		}
		out.Containers[i] = c
	}
	return out
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
