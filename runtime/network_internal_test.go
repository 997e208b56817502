package runtime

import (
	"strings"
	"testing"

	"github.com/docker/docker/api/types/network"
)

// A network this instance made counts as declared when the engine
// reports what the declaration asked for, whatever the engine's way of
// writing addresses, and is a conflict naming what differs otherwise.
func TestNetworkDeclarationMatchesTheEngine(t *testing.T) {
	made := network.Inspect{
		EnableIPv6: true,
		IPAM: network.IPAM{Config: []network.IPAMConfig{
			{Subnet: "10.42.42.0/24", Gateway: "10.42.42.1"},
			{Subnet: "fdcc:ad94:bacf:61a3::/64", Gateway: "fdcc:ad94:bacf:61a3::1/64"},
		}},
		Options: map[string]string{"com.docker.network.bridge.name": "br-wg"},
	}
	declared := NetworkSpec{Name: "wg", Subnet: "10.42.42.0/24", EnableIPv6: true, IPv6Subnet: "fdcc:ad94:bacf:61a3:0::/64",
		IPv6Gateway: "fdcc:ad94:bacf:61a3:0:0:0:1", DriverOptions: map[string]string{"com.docker.network.bridge.name": "br-wg"}}
	tests := []struct {
		name   string
		change func(*NetworkSpec, *network.Inspect)
		want   string
	}{
		{"alike", func(*NetworkSpec, *network.Inspect) {}, ""},
		{"ipv6 off", func(_ *NetworkSpec, i *network.Inspect) { i.EnableIPv6 = false }, "exists without IPv6, declared with enableIPv6"},
		{"ipv6 on by the daemon's default, not declared", func(n *NetworkSpec, _ *network.Inspect) { n.EnableIPv6, n.IPv6Subnet, n.IPv6Gateway = false, "", "" }, ""},
		{"another ipv6 pool", func(n *NetworkSpec, _ *network.Inspect) { n.IPv6Subnet = "fd00:1::/64" }, "declared ipv6Subnet fd00:1::/64"},
		{"another bridge name", func(n *NetworkSpec, _ *network.Inspect) {
			n.DriverOptions = map[string]string{"com.docker.network.bridge.name": "br-other"}
		}, `exists with option com.docker.network.bridge.name="br-wg", declared "br-other"`},
		{"an option the engine does not report", func(n *NetworkSpec, _ *network.Inspect) {
			n.DriverOptions = map[string]string{"com.docker.network.bridge.name": "br-wg", "com.docker.network.driver.mtu": "1400"}
		}, ""},
		{"internal differs", func(n *NetworkSpec, _ *network.Inspect) { n.Internal = true }, "exists with internal false, declared true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, info := declared, made
			n.DriverOptions = map[string]string{"com.docker.network.bridge.name": "br-wg"}
			tt.change(&n, &info)
			err := sameDeclaration(info, n, false)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !IsConflict(err)):
				t.Errorf("error %v, want a conflict with %q", err, tt.want)
			}
		})
	}
}
