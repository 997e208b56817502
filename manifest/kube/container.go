package kube

import (
	"fmt"
	"slices"
	"strconv"
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
	var secret map[string]bool
	out.Env, secret = p.env(field, c)
	out.Command = p.expandAll(field+".command", c.Command, out.Env, secret)
	out.Args = p.expandAll(field+".args", c.Args, out.Env, secret)
	p.ports(&out, field, c.Ports, m.HostNetwork)
	p.resources(&out, field, c.Resources)
	p.security(&out, field, c.SecurityContext, sec)
	out.LivenessProbe = p.probe(field+".livenessProbe", c.LivenessProbe, false)
	out.ReadinessProbe = p.probe(field+".readinessProbe", c.ReadinessProbe, true)
	out.StartupProbe = p.probe(field+".startupProbe", c.StartupProbe, false)
	p.mounts(m, &out, field, c.VolumeMounts)
	out.Lifecycle, out.StopSignal = p.lifecycle(field+".lifecycle", c.Lifecycle)
	return out
}

// lifecycle translates a container's hooks and stop signal.
func (p *podTranslation) lifecycle(field string, l *corev1.Lifecycle) (*manifest.Lifecycle, string) {
	if l == nil {
		return nil, ""
	}
	out := &manifest.Lifecycle{PostStart: p.hook(field+".postStart", l.PostStart), PreStop: p.hook(field+".preStop", l.PreStop)}
	if out.PostStart == nil && out.PreStop == nil {
		out = nil
	}
	signal := ""
	if l.StopSignal != nil {
		signal = string(*l.StopSignal)
	}
	return out, signal
}

// hook translates one lifecycle handler: exec, httpGet or sleep.
func (p *podTranslation) hook(field string, h *corev1.LifecycleHandler) *manifest.Hook {
	if h == nil {
		return nil
	}
	if n := countSet(h.Exec != nil, h.HTTPGet != nil, h.TCPSocket != nil, h.Sleep != nil); n != 1 {
		p.errorf(field, "%d actions: set one of exec, httpGet, sleep", n)
		return nil
	}
	switch {
	case h.Exec != nil:
		return &manifest.Hook{Exec: &manifest.Exec{Command: slices.Clone(h.Exec.Command)}}
	case h.HTTPGet != nil:
		if h.HTTPGet.Scheme != "" && h.HTTPGet.Scheme != corev1.URISchemeHTTP {
			p.errorf(field+".httpGet.scheme", "%s: not supported by hostlet yet (HTTP is)", h.HTTPGet.Scheme)
		}
		return &manifest.Hook{HTTPGet: &manifest.HTTPGet{Path: h.HTTPGet.Path, Port: h.HTTPGet.Port.String(), Host: h.HTTPGet.Host, HTTPHeaders: headers(h.HTTPGet.HTTPHeaders)}}
	case h.Sleep != nil:
		if h.Sleep.Seconds <= 0 {
			p.errorf(field+".sleep.seconds", "%d: a pause of at least 1 second", h.Sleep.Seconds)
			return nil
		}
		return &manifest.Hook{SleepSeconds: h.Sleep.Seconds}
	}
	return nil
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
		p.errorf(field, "%d handlers: set one of exec, httpGet, tcpSocket, grpc", n)
		return nil
	}
	switch {
	case h.HTTPGet != nil:
		if h.HTTPGet.Scheme != "" && h.HTTPGet.Scheme != corev1.URISchemeHTTP {
			p.errorf(field+".httpGet.scheme", "%s: not supported by hostlet yet (HTTP is)", h.HTTPGet.Scheme)
		}
		out.Type = manifest.ProbeHTTP
		out.HTTPGet = &manifest.HTTPGet{Path: h.HTTPGet.Path, Port: h.HTTPGet.Port.String(), Host: h.HTTPGet.Host, HTTPHeaders: headers(h.HTTPGet.HTTPHeaders)}
	case h.TCPSocket != nil:
		out.Type = manifest.ProbeTCP
		out.TCPSocket = &manifest.TCPSocket{Port: h.TCPSocket.Port.String()}
	case h.Exec != nil:
		out.Type = manifest.ProbeExec
		out.Exec = &manifest.Exec{Command: slices.Clone(h.Exec.Command)}
	case h.GRPC != nil:
		out.Type = manifest.ProbeGRPC
		out.GRPC = &manifest.GRPC{Port: strconv.Itoa(int(h.GRPC.Port))}
		if h.GRPC.Service != nil {
			out.GRPC.Service = *h.GRPC.Service
		}
	default:
		p.errorf(field, "no handler: set one of exec, httpGet, tcpSocket, grpc")
	}
	return out
}

// headers are an httpGet's headers, nil for none.
func headers(hs []corev1.HTTPHeader) []manifest.HTTPHeader {
	var out []manifest.HTTPHeader
	for _, h := range hs {
		out = append(out, manifest.HTTPHeader{Name: h.Name, Value: h.Value})
	}
	return out
}

// MaxExpandedBytes bounds what $(VAR) references expand a value to, and
// every value of one pod together: a few references to references would
// otherwise grow a small manifest to gigabytes.
const MaxExpandedBytes = 1 << 20

// expandAll expands $(VAR) references in each of args (at field), as
// Kubernetes does in command and args. A reference to a variable that
// holds a Secret's value is an error: the command line is shown in the
// status, where env values are not.
func (p *podTranslation) expandAll(field string, args []string, env []manifest.EnvVar, secret map[string]bool) []string {
	if args == nil {
		return nil
	}
	vars := envMap(env)
	out := make([]string, len(args))
	for i, a := range args {
		f := fmt.Sprintf("%s[%d]", field, i)
		for _, name := range references(a, vars) {
			if secret[name] {
				p.errorf(f, "$(%s) holds a Secret's value, which the status would show on the command line: read it from the environment instead", name)
				return nil
			}
		}
		out[i] = p.expand(f, a, vars)
	}
	return out
}

// references are the names of vars that s references as $(NAME), read
// as expand reads them ($$ an escaped $).
func references(s string, vars map[string]string) []string {
	var out []string
	for i := 0; i < len(s)-1; i++ {
		if s[i] != '$' {
			continue
		}
		switch s[i+1] {
		case '$':
			i++
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				if name := s[i+2 : i+2+end]; hasKey(vars, name) {
					out = append(out, name)
				}
				i += 2 + end
			}
		}
	}
	return out
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// expand is expand(s, vars) within the pod's budget: what references add
// to all of the pod's values together is at most MaxExpandedBytes; past
// it, an error of field.
func (p *podTranslation) expand(field, s string, vars map[string]string) string {
	out, ok := expand(s, vars, len(s)+MaxExpandedBytes-p.expanded)
	if !ok {
		p.errorf(field, "$(VAR) references expand it to more than %d bytes", MaxExpandedBytes)
		return ""
	}
	p.expanded += max(0, len(out)-len(s))
	return out
}

// expand replaces each $(NAME) of s whose NAME is in vars by its value
// and $$ by $, as Kubernetes does; any other $(NAME) is left as it is.
// ok is false when the result would be longer than limit bytes.
func expand(s string, vars map[string]string, limit int) (string, bool) {
	if !strings.Contains(s, "$") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if b.Len() > limit {
			return "", false
		}
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
					if b.Len()+len(v) > limit {
						return "", false
					}
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
	return b.String(), b.Len() <= limit
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
