package validate

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"

	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
)

// ipv6 checks network f's IPv6 pool and the pod's IPv6 address on it, as
// ipam checks the IPv4 ones; a pool or an address needs enableIPv6.
func (c *checker) ipv6(f string, n manifest.Network) {
	if !n.EnableIPv6 && (n.IPv6Subnet != "" || n.IPv6Address != "") && !n.External {
		c.add(f+".enableIPv6", "required with ipv6Subnet and ipv6Address (the engine makes an IPv4-only network otherwise)")
	}
	if n.External && n.EnableIPv6 {
		c.add(f+".enableIPv6", "applies to networks hostlet creates, not to an external one")
	}
	c.pool(f, addressPool{family: "IPv6", example: "fd00:5::/64", is: isIPv6,
		subnetKey: "ipv6Subnet", gatewayKey: "ipv6Gateway", rangeKey: "ipv6IPRange", addrKey: "ipv6Address",
		subnet: n.IPv6Subnet, gateway: n.IPv6Gateway, ipRange: n.IPv6IPRange, addr: n.IPv6Address}, n.External)
}

// isIPv6 reports whether a is an IPv6 address proper: not an IPv4 one
// written as IPv6, without a zone.
func isIPv6(a netip.Addr) bool { return a.Is6() && !a.Is4In6() && a.Zone() == "" }

// Bridge driver options a network hostlet creates may set.
const (
	optBridgeName    = "com.docker.network.bridge.name"
	optICC           = "com.docker.network.bridge.enable_icc"
	optMasquerade    = "com.docker.network.bridge.enable_ip_masquerade"
	optHostBinding   = "com.docker.network.bridge.host_binding_ipv4"
	optMTU           = "com.docker.network.driver.mtu"
	optIfacePrefix   = "com.docker.network.container_iface_prefix"
	maxDriverOptions = 8
)

// interfaceName is a Linux network interface name the engine can make:
// at most 15 bytes, no '/', ':' or white space.
var interfaceName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// driverOptions checks network f's bridge options: only the options of
// the bridge driver listed above, each with a value of its kind. A bridge
// name is the host's interface: an existing bridge of the host (the
// LAN's) of that name is joined by the engine, so it needs
// policy.hostNetwork, as the host's network does.
func (c *checker) driverOptions(f string, n manifest.Network, p Policy) {
	if len(n.DriverOptions) == 0 {
		return
	}
	if n.External {
		c.add(f+".driverOptions", "applies to networks hostlet creates, not to an external one")
		return
	}
	if len(n.DriverOptions) > maxDriverOptions {
		c.add(f+".driverOptions", "%d options are over the limit of %d", len(n.DriverOptions), maxDriverOptions)
		return
	}
	for _, k := range sortedKeys(n.DriverOptions) {
		v, key := n.DriverOptions[k], fmt.Sprintf("%s.driverOptions[%s]", f, strconv.Quote(textcap.Excerpt(k)))
		switch k {
		case optBridgeName:
			switch {
			case !interfaceName.MatchString(v) || v == "." || v == "..":
				c.add(key, "%q is not an interface name (at most 15 letters, digits, '_', '.', '-')", excerpt(v))
			case slices.Contains([]string{"docker0", "lo", "cni-podman0", "podman0"}, v):
				c.add(key, "%q is the host's or the engine's own interface", v)
			case !p.HostNetwork:
				c.add(key, "a bridge of the host by that name would be joined by the engine: set the host config's policy.hostNetwork: true to allow naming the bridge")
			}
		case optICC, optMasquerade:
			if _, err := strconv.ParseBool(v); err != nil {
				c.add(key, "%q is not true or false", excerpt(v))
			}
		case optHostBinding:
			if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
				c.add(key, "%q is not an IPv4 address", excerpt(v))
			}
		case optMTU:
			if mtu, err := strconv.Atoi(v); err != nil || mtu < 68 || mtu > 65535 {
				c.add(key, "%q is not an MTU (68 to 65535)", excerpt(v))
			}
		case optIfacePrefix:
			if !interfaceName.MatchString(v) || len(v) > 10 {
				c.add(key, "%q is not an interface name prefix (at most 10 letters, digits, '_', '.', '-')", excerpt(v))
			}
		default:
			c.add(key, "not one of the bridge options hostlet applies (%s, %s, %s, %s, %s, %s)", optBridgeName, optICC, optMasquerade, optHostBinding, optMTU, optIfacePrefix)
			continue
		}
		if p.EnginePodman && k != optBridgeName && k != optMTU {
			c.add(key, "this host's engine is Podman, whose Docker-compatible API ignores this option (with a warning only): leave it out, or set it in Podman's own network configuration")
		}
	}
}
