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
	var subnet netip.Prefix
	if n.IPv6Subnet != "" {
		p, err := netip.ParsePrefix(n.IPv6Subnet)
		switch {
		case err != nil || !p.Addr().Is6() || p.Addr().Is4In6():
			c.add(f+".ipv6Subnet", "%q is not an IPv6 subnet (fd00:5::/64)", excerpt(n.IPv6Subnet))
		case p.Masked() != p:
			c.add(f+".ipv6Subnet", "%q has host bits set: %s", n.IPv6Subnet, p.Masked())
		case n.External:
			c.add(f+".ipv6Subnet", "applies to networks hostlet creates, not to an external one")
		default:
			subnet = p
		}
	}
	if n.External && n.EnableIPv6 {
		c.add(f+".enableIPv6", "applies to networks hostlet creates, not to an external one")
	}
	if n.IPv6Subnet == "" && (n.IPv6Gateway != "" || n.IPv6IPRange != "") {
		c.add(f+".ipv6Subnet", "required with ipv6Gateway and ipv6IPRange")
	}
	if n.IPv6Gateway != "" {
		if a, err := netip.ParseAddr(n.IPv6Gateway); err != nil || !a.Is6() || a.Is4In6() || subnet.IsValid() && !subnet.Contains(a) {
			c.add(f+".ipv6Gateway", "%q is not an IPv6 address in subnet %s", excerpt(n.IPv6Gateway), n.IPv6Subnet)
		}
	}
	if n.IPv6IPRange != "" {
		if r, err := netip.ParsePrefix(n.IPv6IPRange); err != nil || !r.Addr().Is6() || r.Masked() != r || subnet.IsValid() && (!subnet.Contains(r.Addr()) || r.Bits() < subnet.Bits()) {
			c.add(f+".ipv6IPRange", "%q is not an IPv6 range (a CIDR) within subnet %s", excerpt(n.IPv6IPRange), n.IPv6Subnet)
		}
	}
	if n.IPv6Address == "" {
		return
	}
	a, err := netip.ParseAddr(n.IPv6Address)
	switch {
	case err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "":
		c.add(f+".ipv6Address", "%q is not an IPv6 address", excerpt(n.IPv6Address))
	case n.IPv6Subnet == "" && !n.External:
		c.add(f+".ipv6Address", "needs the network's ipv6Subnet (the engine gives a chosen address only on a network whose subnet was given)")
	case subnet.IsValid() && !subnet.Contains(a):
		c.add(f+".ipv6Address", "%s is not in subnet %s", a, n.IPv6Subnet)
	case subnet.IsValid() && (a == subnet.Addr() || n.IPv6Gateway != "" && a.String() == n.IPv6Gateway):
		c.add(f+".ipv6Address", "%s is the subnet's own address or its gateway", a)
	}
}

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
