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
		{"dual stack", manifest.Network{Name: "shop", Subnet: "10.5.0.0/24", IPv4Address: "10.5.0.10", EnableIPv6: true, IPv6Subnet: "fd00:5::/64", IPv6Gateway: "fd00:5::1", IPv6IPRange: "fd00:5::/80", IPv6Address: "fd00:5::a"}, ""},
		{"ipv6 by the engine's pool", manifest.Network{Name: "shop", EnableIPv6: true}, ""},
		{"ipv6 subnet without enableIPv6", manifest.Network{Name: "shop", IPv6Subnet: "fd00:5::/64"}, `networks[0].enableIPv6: required with ipv6Subnet and ipv6Address`},
		{"ipv4 as ipv6 subnet", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "10.5.0.0/24"}, `networks[0].ipv6Subnet: "10.5.0.0/24" is not an IPv6 subnet`},
		{"mapped ipv4 as ipv6 subnet", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "::ffff:10.5.0.0/120"}, `networks[0].ipv6Subnet: "::ffff:10.5.0.0/120" is not an IPv6 subnet`},
		{"ipv6 host bits", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "fd00:5::7/64"}, `networks[0].ipv6Subnet: "fd00:5::7/64" has host bits set: fd00:5::/64`},
		{"ipv6 gateway outside", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "fd00:5::/64", IPv6Gateway: "fd00:6::1"}, `networks[0].ipv6Gateway: "fd00:6::1" is not an IPv6 address in subnet fd00:5::/64`},
		{"ipv6 range wider", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "fd00:5::/64", IPv6IPRange: "fd00::/48"}, `networks[0].ipv6IPRange: "fd00::/48" is not an IPv6 range`},
		{"ipv6 address without subnet", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Address: "fd00:5::a"}, `networks[0].ipv6Address: needs the network's ipv6Subnet`},
		{"ipv6 address outside", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "fd00:5::/64", IPv6Address: "fd00:6::a"}, `networks[0].ipv6Address: fd00:6::a is not in subnet fd00:5::/64`},
		{"ipv6 address with a zone", manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: "fd00:5::/64", IPv6Address: "fd00:5::a%eth0"}, `networks[0].ipv6Address: "fd00:5::a%eth0" is not an IPv6 address`},
		{"ipv6 on an external network", manifest.Network{Name: "corp", External: true, EnableIPv6: true}, `networks[0].enableIPv6: applies to networks hostlet creates`},
		{"ipv6 address on an external network", manifest.Network{Name: "corp", External: true, IPv6Address: "fd00:9::a"}, ""},
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

func TestNetworkDriverOptions(t *testing.T) {
	const name = "com.docker.network.bridge.name"
	tests := []struct {
		name        string
		opts        map[string]string
		hostNetwork bool
		external    bool
		want        string
	}{
		{"bridge options", map[string]string{"com.docker.network.bridge.enable_icc": "false", "com.docker.network.bridge.enable_ip_masquerade": "true",
			"com.docker.network.bridge.host_binding_ipv4": "127.0.0.1", "com.docker.network.driver.mtu": "1400", "com.docker.network.container_iface_prefix": "eth"}, false, false, ""},
		{"bridge name allowed", map[string]string{name: "br-mailcow"}, true, false, ""},
		{"bridge name refused", map[string]string{name: "br-mailcow"}, false, false, `networks[0].driverOptions["com.docker.network.bridge.name"]: a bridge of the host by that name would be joined by the engine: set the host config's policy.hostNetwork: true`},
		{"bridge name too long", map[string]string{name: "br-0123456789abc"}, true, false, `is not an interface name`},
		{"bridge name a path", map[string]string{name: "../eth0"}, true, false, `is not an interface name`},
		{"the engine's bridge", map[string]string{name: "docker0"}, true, false, `"docker0" is the host's or the engine's own interface`},
		{"not a bool", map[string]string{"com.docker.network.bridge.enable_icc": "no way"}, false, false, `"no way" is not true or false`},
		{"not an mtu", map[string]string{"com.docker.network.driver.mtu": "20"}, false, false, `"20" is not an MTU`},
		{"not an ipv4 binding", map[string]string{"com.docker.network.bridge.host_binding_ipv4": "::1"}, false, false, `"::1" is not an IPv4 address`},
		{"another driver's option", map[string]string{"parent": "eth0"}, true, false, `networks[0].driverOptions["parent"]: not one of the bridge options hostlet applies`},
		{"on an external network", map[string]string{"com.docker.network.driver.mtu": "1400"}, true, true, `networks[0].driverOptions: applies to networks hostlet creates`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("web")
			m.Networks = []manifest.Network{{Name: "shop", External: tt.external, DriverOptions: tt.opts}}
			err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{ExternalNetworks: []string{"*"}, Policy: validate.Policy{HostNetwork: tt.hostNetwork}})
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
	v6 := func(subnet, ip string) manifest.Network {
		return manifest.Network{Name: "shop", EnableIPv6: true, IPv6Subnet: subnet, IPv6Address: ip}
	}
	tests := []struct {
		name string
		a, b manifest.Network
		want string
	}{
		{"alike", net("10.5.0.0/24", "10.5.0.10"), net("10.5.0.0/24", "10.5.0.11"), ""},
		{"subnet differs", net("10.5.0.0/24", ""), net("10.6.0.0/24", ""), `network "shop" is declared with subnet "10.5.0.0/24", gateway "", ipRange "", enableIPv6 false, ipv6Subnet "", ipv6Gateway "", ipv6IPRange "", driverOptions [] by pod a (s): declare it alike`},
		{"address taken", net("10.5.0.0/24", "10.5.0.10"), net("10.5.0.0/24", "10.5.0.10"), `networks[0].ipv4Address: 10.5.0.10 on network "shop" is already pod a's (s)`},
		{"ipv6 differs", v6("fd00:5::/64", ""), v6("fd00:6::/64", ""), `ipv6Subnet "fd00:5::/64"`},
		{"ipv6 address taken, written otherwise", v6("fd00:5::/64", "fd00:5::a"), v6("fd00:5::/64", "fd00:5:0::a"), `networks[0].ipv6Address: fd00:5:0::a on network "shop" is already pod a's (s)`},
		{"driver options differ", manifest.Network{Name: "shop", DriverOptions: map[string]string{"com.docker.network.driver.mtu": "1400"}}, manifest.Network{Name: "shop"}, `driverOptions [com.docker.network.driver.mtu=1400]`},
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

// A value interpolation made (hidden) never shows in a network's error,
// not even cut short to an excerpt: options, IPv6 pools and addresses,
// and the declaration another pod conflicts with.
func TestNetworkErrorsHideInterpolatedValues(t *testing.T) {
	secret := strings.Repeat("S3cr3tPw", 13) // over the excerpt's length
	m := pod("web")
	m.Networks = []manifest.Network{{Name: "shop", EnableIPv6: true, IPv6Subnet: secret, IPv6Gateway: secret, IPv6Address: secret,
		DriverOptions: map[string]string{"com.docker.network.driver.mtu": secret, "com.docker.network.bridge.name": secret}}}
	s := sourced("s", "web.yaml", 0, m)
	s.Hidden = []string{secret}
	err := validate.Manifest(s, validate.Options{Policy: validate.Policy{HostNetwork: true}})
	if err == nil || strings.Contains(err.Error(), "S3cr3t") || !strings.Contains(err.Error(), "<value hidden>") {
		t.Errorf("error %v, want every value hidden", err)
	}
	first, second := pod("a"), pod("b")
	first.Networks = []manifest.Network{{Name: "shop", DriverOptions: map[string]string{"com.docker.network.driver.mtu": "1400", "com.docker.network.bridge.name": "br-x"}}}
	second.Networks = []manifest.Network{{Name: "shop"}}
	a := sourced("s", "a.yaml", 0, first)
	a.Hidden = []string{"br-x"}
	res := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{a, sourced("s", "b.yaml", 0, second)}}}, validate.Options{Policy: validate.Policy{HostNetwork: true}})
	for _, r := range res.Rejected {
		if got := strings.Join(r.Reasons, ";"); strings.Contains(got, "br-x") || !strings.Contains(got, "com.docker.network.bridge.name=<value hidden>") {
			t.Errorf("rejected %s: %q, want the first pod's hidden option value left out", r.ID, got)
		}
	}
	if len(res.Rejected) != 1 {
		t.Errorf("rejected %d, want b", len(res.Rejected))
	}
}

// On Podman, whose Docker-compatible API only warns about most bridge
// options, they are refused before anything stops; a bridge name and an
// MTU it applies.
func TestNetworkDriverOptionsOnPodman(t *testing.T) {
	m := pod("web")
	m.Networks = []manifest.Network{{Name: "shop", DriverOptions: map[string]string{
		"com.docker.network.bridge.enable_icc": "false", "com.docker.network.driver.mtu": "1400", "com.docker.network.bridge.name": "br-shop"}}}
	err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{Policy: validate.Policy{HostNetwork: true, EnginePodman: true}})
	want := `networks[0].driverOptions["com.docker.network.bridge.enable_icc"]: this host's engine is Podman`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "mtu") || strings.Contains(err.Error(), "bridge.name") {
		t.Errorf("error %v, want only enable_icc refused", err)
	}
}
