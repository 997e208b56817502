package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

func TestNetworkOfFields(t *testing.T) {
	on := func(fn func(m *manifest.Manifest)) manifest.Manifest {
		m := pod("t")
		m.NetworkOf = "vpn"
		fn(&m)
		return m
	}
	tests := []struct {
		name string
		m    manifest.Manifest
		want string
	}{
		{"one container", on(func(*manifest.Manifest) {}), ""},
		{"itself", on(func(m *manifest.Manifest) { m.NetworkOf = "t" }), "networkOf: a pod cannot join its own network"},
		{"not a pod id", on(func(m *manifest.Manifest) { m.NetworkOf = "Vpn_1" }), `networkOf: "Vpn_1"`},
		{"two containers", on(func(m *manifest.Manifest) {
			m.Containers = append(m.Containers, manifest.Container{Name: "side", Image: "example.org/side:1"})
		}), "networkOf: a pod of 2 containers"},
		{"ports", on(func(m *manifest.Manifest) {
			m.Containers[0].Ports = []manifest.Port{{ContainerPort: 80, HostPort: 8080}}
		}),
			"containers[0].ports: a pod on another pod's network publishes nothing: publish the ports on pod vpn"},
		{"networks", on(func(m *manifest.Manifest) { m.Networks = []manifest.Network{{Name: "shop"}} }), "networks: a pod on another pod's network has none of its own"},
		{"hostname", on(func(m *manifest.Manifest) { m.Hostname = "t" }), "hostname: a pod on another pod's network has none of its own: set it on pod vpn"},
		{"dns", on(func(m *manifest.Manifest) { m.DNS = []string{"10.0.0.53"} }), "dns: a pod on another pod's network has none of its own"},
		{"extra hosts", on(func(m *manifest.Manifest) { m.ExtraHosts = []string{"db:10.0.0.5"} }), "extraHosts: a pod on another pod's network has none of its own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := validate.Manifest(sourced("s", "t.yaml", 0, tt.m), validate.Options{Policy: validate.Policy{HostNetwork: true}})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// The pod whose network another joins is an accepted pod of the same
// source, holding a network of its own: not missing, not another
// source's, not itself a joiner, not on the host's network.
func TestNetworkOfTarget(t *testing.T) {
	joiner := pod("t")
	joiner.NetworkOf = "vpn"
	tests := []struct {
		name   string
		target manifest.Sourced
		want   string
	}{
		{"a pod of the same source", sourced("s", "vpn.yaml", 0, pod("vpn")), ""},
		{"missing", sourced("s", "other.yaml", 0, pod("other")), "networkOf: pod vpn is not an accepted pod of this host"},
		{"another source's", sourced("other", "vpn.yaml", 0, pod("vpn")), "networkOf: pod vpn is of source other: a pod joins the network of a pod of its own source only"},
		{"a joiner itself", sourced("s", "vpn.yaml", 0, edit(pod("vpn"), func(m *manifest.Manifest) { m.NetworkOf = "other" })), "networkOf: pod vpn joins the network of pod other itself: join that one"},
		{"on the host's network", sourced("s", "vpn.yaml", 0, edit(pod("vpn"), func(m *manifest.Manifest) { m.HostNetwork = true })), "networkOf: pod vpn is on the host's network: set hostNetwork instead"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sources := []validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "t.yaml", 0, joiner)}}}
			if tt.target.Origin.Source == "s" {
				sources[0].Manifests = append(sources[0].Manifests, tt.target)
			} else {
				sources = append(sources, validate.Source{Name: tt.target.Origin.Source, Manifests: []manifest.Sourced{tt.target}})
			}
			res := validate.Set(sources, validate.Options{Policy: validate.Policy{HostNetwork: true}})
			var got []string
			for _, r := range res.Rejected {
				if r.ID == "t" {
					got = append(got, r.Reasons...)
				}
			}
			joined := strings.Join(got, "; ")
			if tt.want == "" && joined != "" || tt.want != "" && !strings.Contains(joined, tt.want) {
				t.Errorf("t rejected for %q, want %q", joined, tt.want)
			}
		})
	}
}

func edit(m manifest.Manifest, fn func(*manifest.Manifest)) manifest.Manifest {
	fn(&m)
	return m
}
