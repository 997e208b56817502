package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hostlet/hostlet/manifest"
)

// container translates container c (at field) of the pod.
func (p *podTranslation) container(m *manifest.Manifest, field string, c *corev1.Container, sec podSecurity) manifest.Container {
	out := manifest.Container{
		Name:            c.Name,
		Image:           c.Image,
		WorkingDir:      c.WorkingDir,
		ImagePullPolicy: string(c.ImagePullPolicy),
	}
	if c.Image == "" {
		p.errorf(field+".image", "required")
	}
	out.Env = p.env(field, c)
	vars := envMap(out.Env)
	out.Command = expandAll(c.Command, vars)
	out.Args = expandAll(c.Args, vars)
	p.ports(&out, field, c.Ports, m.HostNetwork)
	p.resources(&out, field, c.Resources)
	p.security(&out, field, c.SecurityContext, sec)
	out.LivenessProbe = p.probe(field+".livenessProbe", c.LivenessProbe, false)
	out.ReadinessProbe = p.probe(field+".readinessProbe", c.ReadinessProbe, true)
	out.StartupProbe = p.probe(field+".startupProbe", c.StartupProbe, false)
	p.mounts(m, &out, field, c.VolumeMounts)
	return out
}

// ports translates a container's ports: a containerPort alone is not
// published, as in Kubernetes; a hostPort publishes it on hostIP.
func (p *podTranslation) ports(c *manifest.Container, field string, ports []corev1.ContainerPort, hostNetwork bool) {
	for i, cp := range ports {
		f := fmt.Sprintf("%s.ports[%d]", field, i)
		proto := string(cp.Protocol)
		if proto == string(corev1.ProtocolSCTP) {
			p.errorf(f+".protocol", "SCTP: not supported by hostlet yet (TCP and UDP are)")
		}
		port := manifest.Port{Name: cp.Name, ContainerPort: int(cp.ContainerPort), HostPort: int(cp.HostPort), HostIP: cp.HostIP, Protocol: proto}
		if hostNetwork && cp.HostPort == 0 {
			// On the host's network a container port is the host's.
			port.HostPort = port.ContainerPort
		}
		if cp.HostIP != "" && cp.HostPort == 0 {
			p.errorf(f+".hostIP", "set without hostPort: a port is published only with a hostPort")
		}
		c.Ports = append(c.Ports, port)
	}
}

// resources translates limits (cpu, memory); requests are noted by the
// field walk, anything else is refused.
func (p *podTranslation) resources(c *manifest.Container, field string, r corev1.ResourceRequirements) {
	for _, name := range slices.Sorted(func(yield func(corev1.ResourceName) bool) {
		for k := range r.Limits {
			if !yield(k) {
				return
			}
		}
	}) {
		q := r.Limits[name]
		switch name {
		case corev1.ResourceCPU:
			c.CPULimit = q.MilliValue()
		case corev1.ResourceMemory:
			c.Memory = q.Value()
		default:
			p.errorf(field+".resources.limits."+string(name), "not supported by hostlet yet (cpu and memory are)")
		}
	}
}

// probe translates a liveness or readiness probe.
func (p *podTranslation) probe(field string, pr *corev1.Probe, readiness bool) *manifest.Probe {
	if pr == nil {
		return nil
	}
	out := &manifest.Probe{
		InitialDelaySeconds: int64(pr.InitialDelaySeconds),
		PeriodSeconds:       int64(pr.PeriodSeconds),
		TimeoutSeconds:      int64(pr.TimeoutSeconds),
		FailureThreshold:    int64(pr.FailureThreshold),
	}
	if pr.SuccessThreshold > 1 {
		what := "a liveness or startup probe's successThreshold must be 1, as in Kubernetes"
		if readiness {
			what = "not supported by hostlet yet (1 is)"
		}
		p.errorf(field+".successThreshold", "%d: %s", pr.SuccessThreshold, what)
	}
	h := pr.ProbeHandler
	if n := countSet(h.HTTPGet != nil, h.TCPSocket != nil, h.Exec != nil, h.GRPC != nil); n > 1 {
		p.errorf(field, "%d handlers: set one of exec, httpGet, tcpSocket", n)
		return nil
	}
	switch {
	case h.HTTPGet != nil:
		if h.HTTPGet.Scheme != "" && h.HTTPGet.Scheme != corev1.URISchemeHTTP {
			p.errorf(field+".httpGet.scheme", "%s: not supported by hostlet yet (HTTP is)", h.HTTPGet.Scheme)
		}
		out.Type = manifest.ProbeHTTP
		out.HTTPGet = &manifest.HTTPGet{Path: h.HTTPGet.Path, Port: h.HTTPGet.Port.String(), Host: h.HTTPGet.Host}
	case h.TCPSocket != nil:
		out.Type = manifest.ProbeTCP
		out.TCPSocket = &manifest.TCPSocket{Port: h.TCPSocket.Port.String()}
	case h.Exec != nil:
		out.Type = manifest.ProbeExec
		out.Exec = &manifest.Exec{Command: slices.Clone(h.Exec.Command)}
	case h.GRPC != nil:
		// Refused by the field walk; no probe to check beside it.
		return nil
	default:
		p.errorf(field, "no handler: set one of exec, httpGet, tcpSocket")
	}
	return out
}

// expandAll expands $(VAR) references in each of args, as Kubernetes
// does in command and args.
func expandAll(args []string, vars map[string]string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = expand(a, vars)
	}
	return out
}

// expand replaces each $(NAME) of s whose NAME is in vars by its value
// and $$ by $, as Kubernetes does; any other $(NAME) is left as it is.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vars[name]; ok {
					b.WriteString(v)
				} else {
					b.WriteString(s[i : i+3+end])
				}
				i += 2 + end
				continue
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}

// envMap is env as a map, the last value of a name winning.
func envMap(env []manifest.EnvVar) map[string]string {
	out := make(map[string]string, len(env))
	for _, e := range env {
		out[e.Name] = e.Value
	}
	return out
}

// countSet counts the conditions that hold.
func countSet(set ...bool) int {
	n := 0
	for _, b := range set {
		if b {
			n++
		}
	}
	return n
}
