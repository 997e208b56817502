package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

func TestNetworkIPAM(t *testing.T) {
	tests := []struct {
		name string
		n    manifest.Network
		want string
	}{
		{"full", manifest.Network{Name: "shop", Subnet: "10.5.0.0/24", Gateway: "10.5.0.1", IPRange: "10.5.0.128/25", IPv4Address: "10.5.0.10"}, ""},
		{"not a subnet", manifest.Network{Name: "shop", Subnet: "10.5.0.0"}, `networks[0].subnet: "10.5.0.0" is not an IPv4 subnet`},
		{"ipv6", manifest.Network{Name: "shop", Subnet: "fd00::/64"}, `networks[0].subnet: "fd00::/64" is not an IPv4 subnet`},
		{"host bits", manifest.Network{Name: "shop", Subnet: "10.5.0.7/24"}, `networks[0].subnet: "10.5.0.7/24" has host bits set: 10.5.0.0/24`},
		{"gateway outside", manifest.Network{Name: "shop", Subnet: "10.5.0.0/24", Gateway: "10.6.0.1"}, `networks[0].gateway: "10.6.0.1" is not an IPv4 address in subnet 10.5.0.0/24`},
		{"range wider", manifest.Network{Name: "shop", Subnet: "10.5.0.0/24", IPRange: "10.5.0.0/16"}, `networks[0].ipRange: "10.5.0.0/16" is not an IPv4 range (a CIDR) within subnet 10.5.0.0/24`},
		{"gateway without subnet", manifest.Network{Name: "shop", Gateway: "10.5.0.1"}, `networks[0].subnet: required with gateway and ipRange`},
		{"address without subnet", manifest.Network{Name: "shop", IPv4Address: "10.5.0.10"}, `networks[0].ipv4Address: needs the network's subnet`},
		{"address on an external network", manifest.Network{Name: "corp", External: true, IPv4Address: "10.9.0.10"}, ""},
		{"address outside", manifest.Network{Name: "shop", Subnet: "10.5.0.0/24", IPv4Address: "10.6.0.10"}, `networks[0].ipv4Address: 10.6.0.10 is not in subnet 10.5.0.0/24`},
		{"address is the gateway", manifest.Network{Name: "shop", Subnet: "10.5.0.0/24", Gateway: "10.5.0.1", IPv4Address: "10.5.0.1"}, `networks[0].ipv4Address: 10.5.0.1 is the subnet's own address or its gateway`},
		{"subnet of an external network", manifest.Network{Name: "corp", External: true, Subnet: "10.9.0.0/16"}, `networks[0].subnet: applies to networks hostlet creates`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("web")
			m.Networks = []manifest.Network{tt.n}
			err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{ExternalNetworks: []string{"*"}})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// Two pods declaring one network with different subnets, or taking one
// address on it: the later one is refused, naming the first.
func TestNetworkIPAMConflicts(t *testing.T) {
	net := func(subnet, ip string) manifest.Network {
		return manifest.Network{Name: "shop", Subnet: subnet, IPv4Address: ip}
	}
	tests := []struct {
		name string
		a, b manifest.Network
		want string
	}{
		{"alike", net("10.5.0.0/24", "10.5.0.10"), net("10.5.0.0/24", "10.5.0.11"), ""},
		{"subnet differs", net("10.5.0.0/24", ""), net("10.6.0.0/24", ""), `network "shop" is declared with subnet "10.5.0.0/24", gateway "", ipRange "" by pod a (s): declare it alike`},
		{"address taken", net("10.5.0.0/24", "10.5.0.10"), net("10.5.0.0/24", "10.5.0.10"), `networks[0].ipv4Address: 10.5.0.10 on network "shop" is already pod a's (s)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := pod("a"), pod("b")
			a.Networks, b.Networks = []manifest.Network{tt.a}, []manifest.Network{tt.b}
			res := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "a.yaml", 0, a), sourced("s", "b.yaml", 0, b)}}}, validate.Options{})
			got := ""
			for _, r := range res.Rejected {
				got += strings.Join(r.Reasons, ";")
			}
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("rejected %q, want %q", got, tt.want)
			}
		})
	}
}
