package validate_test

import (
	"slices"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// TestProbeHostStaysInThePod is finding 9 of issue 12: an httpGet probe's
// host may only be empty (the pod's address) or an address that can be the
// pod's own IP; loopback, link-local (cloud metadata) and names are refused.
// Which IP is the pod's is known when it runs: the probe refuses any other.
func TestProbeHostStaysInThePod(t *testing.T) {
	const field = "containers[0].livenessProbe.httpGet.host"
	const why = ", never the pod's own: a probe reaches only its pod (leave host empty for the pod's address)"
	tests := []struct {
		host string
		want string
	}{
		{host: ""},
		{host: "172.17.0.5"},
		{host: "2001:db8::5"},
		{host: "127.0.0.1", want: `"127.0.0.1" is a loopback address` + why},
		{host: "127.0.0.53", want: `"127.0.0.53" is a loopback address` + why},
		{host: "::1", want: `"::1" is a loopback address` + why},
		{host: "::ffff:127.0.0.1", want: `"::ffff:127.0.0.1" is a loopback address` + why},
		{host: "0.0.0.0", want: `"0.0.0.0" is the unspecified address` + why},
		{host: "169.254.169.254", want: `"169.254.169.254" is a link-local address` + why},
		{host: "fe80::1", want: `"fe80::1" is a link-local address` + why},
		{host: "224.0.0.1", want: `"224.0.0.1" is not a unicast address` + why},
		{host: "255.255.255.255", want: `"255.255.255.255" is not a unicast address` + why},
		{host: "localhost", want: `"localhost" is not an IP address: a probe reaches only its pod (leave host empty for the pod's address)`},
		{host: "host.docker.internal", want: `"host.docker.internal" is not an IP address: a probe reaches only its pod (leave host empty for the pod's address)`},
		{host: "10.0.0.1:8080", want: `"10.0.0.1:8080" is not an IP address: a probe reaches only its pod (leave host empty for the pod's address)`},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Ports = []manifest.Port{{ContainerPort: 8080}}
			m.Containers[0].LivenessProbe = &manifest.Probe{Type: manifest.ProbeHTTP, HTTPGet: &manifest.HTTPGet{Host: tt.host, Port: "8080", Path: "/healthz"}}
			var got []string
			for _, e := range validate.Flatten(validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})) {
				got = append(got, e.Field+": "+e.Detail)
			}
			var want []string
			if tt.want != "" {
				want = []string{field + ": " + tt.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("errors %q, want %q", got, want)
			}
		})
	}
}

// A gRPC probe names a port of the container and, optionally, a service.
func TestGRPCProbeIsChecked(t *testing.T) {
	tests := []struct {
		name  string
		probe manifest.Probe
		want  string
	}{
		{"port", manifest.Probe{Type: manifest.ProbeGRPC, GRPC: &manifest.GRPC{Port: "9090"}}, ""},
		{"service", manifest.Probe{Type: manifest.ProbeGRPC, GRPC: &manifest.GRPC{Port: "9090", Service: "shop.Orders"}}, ""},
		{"no grpc", manifest.Probe{Type: manifest.ProbeGRPC}, "containers[0].readinessProbe.grpc: required for type grpc"},
		{"not a port", manifest.Probe{Type: manifest.ProbeGRPC, GRPC: &manifest.GRPC{Port: "grpc"}}, "containers[0].readinessProbe.grpc.port"},
		{"control character", manifest.Probe{Type: manifest.ProbeGRPC, GRPC: &manifest.GRPC{Port: "9090", Service: "a\nb"}},
			"containers[0].readinessProbe.grpc.service: a service name of at most 253 characters, without control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Ports = []manifest.Port{{ContainerPort: 9090}}
			p := tt.probe
			m.Containers[0].ReadinessProbe = &p
			var got []string
			for _, e := range validate.Flatten(validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})) {
				got = append(got, e.Field+": "+e.Detail)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("errors %q, want none", got)
			case tt.want != "" && !slices.ContainsFunc(got, func(g string) bool { return len(g) >= len(tt.want) && g[:len(tt.want)] == tt.want }):
				t.Errorf("errors %q, want one starting %q", got, tt.want)
			}
		})
	}
}

// An httpGet's headers are header names and values without control
// characters, at most manifest.MaxHTTPHeaders of them.
func TestHTTPHeadersAreChecked(t *testing.T) {
	many := make([]manifest.HTTPHeader, manifest.MaxHTTPHeaders+1)
	for i := range many {
		many[i] = manifest.HTTPHeader{Name: "X-A", Value: "v"}
	}
	tests := []struct {
		name    string
		headers []manifest.HTTPHeader
		want    string
	}{
		{"plain", []manifest.HTTPHeader{{Name: "Host", Value: "shop.example.org"}, {Name: "X-Probe", Value: "1"}}, ""},
		{"bad name", []manifest.HTTPHeader{{Name: "X Probe", Value: "1"}}, "containers[0].readinessProbe.httpGet.httpHeaders[0].name"},
		{"smuggled line", []manifest.HTTPHeader{{Name: "X-A", Value: "1\r\nX-B: 2"}}, "containers[0].readinessProbe.httpGet.httpHeaders[0].value"},
		{"too many", many, "containers[0].readinessProbe.httpGet.httpHeaders: 33 headers are over the limit of 32"},
		{"not a host", []manifest.HTTPHeader{{Name: "host", Value: "shop example"}}, `containers[0].readinessProbe.httpGet.httpHeaders[0].value: "shop example" is not a host name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Ports = []manifest.Port{{ContainerPort: 8080}}
			m.Containers[0].ReadinessProbe = &manifest.Probe{Type: manifest.ProbeHTTP, HTTPGet: &manifest.HTTPGet{Port: "8080", HTTPHeaders: tt.headers}}
			var got []string
			for _, e := range validate.Flatten(validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{})) {
				got = append(got, e.Field+": "+e.Detail)
			}
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("errors %q, want none", got)
			case tt.want != "" && !slices.ContainsFunc(got, func(g string) bool { return len(g) >= len(tt.want) && g[:len(tt.want)] == tt.want }):
				t.Errorf("errors %q, want one starting %q", got, tt.want)
			}
		})
	}
}
