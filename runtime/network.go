package runtime

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/versions"
)

// NetworkSpec is a user-defined network a container joins.
type NetworkSpec struct {
	Name string
	// Aliases are the container's names on the network.
	Aliases []string
	// External: made outside hostlet; it must exist and is never created
	// or removed.
	External bool
	// Internal: created without outside connectivity.
	Internal bool
	// Subnet, Gateway and IPRange are the IPAM settings it is created
	// with (unset: the engine's choice); IPv4Address is the container's
	// address on it.
	Subnet, Gateway, IPRange, IPv4Address string
	// EnableIPv6 makes it dual-stack, with the IPv6 pool IPv6Subnet,
	// IPv6Gateway, IPv6IPRange (unset: the engine's choice);
	// IPv6Address is the container's IPv6 address on it.
	EnableIPv6                                        bool
	IPv6Subnet, IPv6Gateway, IPv6IPRange, IPv6Address string
	// DriverOptions are the bridge driver's options it is created with.
	DriverOptions map[string]string
}

// endpoint is the container's settings on network n.
func endpoint(n NetworkSpec) *network.EndpointSettings {
	e := &network.EndpointSettings{Aliases: n.Aliases}
	if n.IPv4Address != "" || n.IPv6Address != "" {
		e.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: n.IPv4Address, IPv6Address: n.IPv6Address}
	}
	return e
}

// EnsureNetwork makes the network exist: an external one must exist
// (ErrNotFound otherwise); any other is created as a bridge, labelled
// with labels, io.hostlet.managed and io.hostlet.instance, unless this
// instance made it already. A network of that name made by someone else
// is an ErrConflict: it is never adopted (declare it external to use it).
func (d *Docker) EnsureNetwork(ctx context.Context, n NetworkSpec, labels map[string]string) error {
	// The engine's duplicate check is not atomic: two pods of a project
	// created at once would make two networks of one name, which no
	// container can then join ("ambiguous"). One ensure at a time.
	d.networkMu.Lock()
	defer d.networkMu.Unlock()
	if err := d.checkNetwork(ctx, n); err == nil || !IsNotFound(err) || n.External {
		return err
	}
	if d.engine.Podman() {
		for _, k := range slices.Sorted(maps.Keys(n.DriverOptions)) {
			if !slices.Contains(podmanBridgeOptions, k) {
				return fmt.Errorf("network %q: option %s: Podman's Docker-compatible API ignores it (with a warning only): leave it out on this host, or set it in Podman's own network configuration", n.Name, k)
			}
		}
	}
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelManaged] = "true"
	l[LabelInstance] = d.instance
	// The client asks the engine (API < 1.44) to refuse a duplicate name,
	// so two pods creating one network at once make one network.
	resp, err := d.cli.NetworkCreate(ctx, n.Name, createOptions(n, l))
	if err == nil {
		if resp.Warning != "" {
			d.log.Warn("the engine created the network with a warning", "network", n.Name, "warning", resp.Warning)
		}
		d.log.Debug("created network", "network", n.Name)
		return nil
	}
	if err := translate(err); !IsConflict(err) {
		return fmt.Errorf("create network %q: %w", n.Name, err)
	}
	return d.checkNetwork(ctx, n)
}

// podmanBridgeOptions are the bridge options Podman's Docker-compatible
// network create applies; it answers the others with a warning only.
var podmanBridgeOptions = []string{"com.docker.network.bridge.name", "com.docker.network.driver.mtu"}

// createOptions are the engine's settings for network n: a bridge with
// n's pools, IPv6 and driver options.
func createOptions(n NetworkSpec, labels map[string]string) network.CreateOptions {
	opts := network.CreateOptions{Driver: "bridge", Internal: n.Internal, Labels: labels, Options: maps.Clone(n.DriverOptions)}
	var pools []network.IPAMConfig
	if n.Subnet != "" {
		pools = append(pools, network.IPAMConfig{Subnet: n.Subnet, Gateway: n.Gateway, IPRange: n.IPRange})
	}
	if n.IPv6Subnet != "" {
		pools = append(pools, network.IPAMConfig{Subnet: n.IPv6Subnet, Gateway: n.IPv6Gateway, IPRange: n.IPv6IPRange})
	}
	if len(pools) > 0 {
		opts.IPAM = &network.IPAM{Driver: "default", Config: pools}
	}
	if n.EnableIPv6 {
		opts.EnableIPv6 = &n.EnableIPv6
	}
	return opts
}

// checkNetwork inspects the network: ErrNotFound when it is not there, an
// ErrConflict when it is there but not this instance's own (and not
// declared external).
func (d *Docker) checkNetwork(ctx context.Context, n NetworkSpec) error {
	info, err := d.inspectNetwork(ctx, n.Name)
	if err != nil {
		if IsNotFound(err) && n.External {
			return fmt.Errorf("network %q is declared external and does not exist: %w", n.Name, err)
		}
		return fmt.Errorf("inspect network %q: %w", n.Name, err)
	}
	if n.External {
		return nil
	}
	if info.Labels[LabelManaged] == "true" && info.Labels[LabelInstance] == d.instance {
		return sameDeclaration(info, n, d.engine.Podman())
	}
	return fmt.Errorf("network %q: %w", n.Name,
		classify(fmt.Errorf("exists and does not belong to hostlet instance %q (declare it external to join it)", d.instance), ErrConflict))
}

// sameDeclaration is nil when this instance's network info is made as n
// declares it, and an ErrConflict naming what differs otherwise (a
// network is made once: a changed declaration needs its pods removed).
func sameDeclaration(info network.Inspect, n NetworkSpec, podman bool) error {
	var differs string
	switch {
	case info.Internal != n.Internal:
		differs = fmt.Sprintf("exists with internal %v, declared %v", info.Internal, n.Internal)
	case n.Subnet != "" && !hasPool(info, n.Subnet, n.Gateway, n.IPRange, podman):
		differs = fmt.Sprintf("exists with IPAM %+v, declared subnet %s gateway %q ipRange %q", info.IPAM.Config, n.Subnet, n.Gateway, n.IPRange)
	case n.EnableIPv6 && !info.EnableIPv6:
		// Not the other way round: a daemon whose default-network-opts
		// enable IPv6 makes every network dual-stack, declared or not.
		differs = "exists without IPv6, declared with enableIPv6"
	case n.IPv6Subnet != "" && !hasPool(info, n.IPv6Subnet, n.IPv6Gateway, n.IPv6IPRange, podman):
		differs = fmt.Sprintf("exists with IPAM %+v, declared ipv6Subnet %s ipv6Gateway %q ipv6IPRange %q", info.IPAM.Config, n.IPv6Subnet, n.IPv6Gateway, n.IPv6IPRange)
	default:
		for _, k := range slices.Sorted(maps.Keys(n.DriverOptions)) {
			// An option the engine does not report (Podman keeps its own
			// names for some) is unknown, not different.
			if v, ok := info.Options[k]; ok && v != n.DriverOptions[k] {
				differs = fmt.Sprintf("exists with option %s=%q, declared %q", k, v, n.DriverOptions[k])
				break
			}
		}
	}
	if differs == "" {
		return nil
	}
	return fmt.Errorf("network %q: %w", n.Name, classify(fmt.Errorf("%s (another pod declares it otherwise, or it changed: remove its pods to make it anew)", differs), ErrConflict))
}

// hasPool reports whether the network has the pool subnet, gateway,
// ipRange (the engine fills in a gateway when none is given; addresses
// compared as addresses, not as text). rangeUnreported: the engine never
// reports an IPRange (Podman: its compatible API leaves it out of the
// answer although the network has it), so a missing one is unknown, not
// different.
func hasPool(info network.Inspect, subnet, gateway, ipRange string, rangeUnreported bool) bool {
	for _, c := range info.IPAM.Config {
		sameRange := samePrefix(c.IPRange, ipRange) || rangeUnreported && c.IPRange == ""
		if samePrefix(c.Subnet, subnet) && (gateway == "" || sameAddr(c.Gateway, gateway)) && sameRange {
			return true
		}
	}
	return false
}

func samePrefix(a, b string) bool {
	pa, errA := netip.ParsePrefix(a)
	pb, errB := netip.ParsePrefix(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa == pb
}

func sameAddr(a, b string) bool {
	// The engine may report a gateway with its prefix length.
	a, _, _ = strings.Cut(a, "/")
	pa, errA := netip.ParseAddr(a)
	pb, errB := netip.ParseAddr(b)
	if errA != nil || errB != nil {
		return a == b
	}
	return pa == pb
}

// RemoveNetwork removes a network this instance made. A network that is
// not there, or not this instance's, is left alone without error; one that
// containers still use is an ErrConflict.
func (d *Docker) RemoveNetwork(ctx context.Context, name string) error {
	info, err := d.inspectNetwork(ctx, name)
	if err != nil {
		if !IsNotFound(err) {
			return fmt.Errorf("inspect network %q: %w", name, err)
		}
		return nil
	}
	if info.Labels[LabelManaged] != "true" || info.Labels[LabelInstance] != d.instance {
		return nil
	}
	// Docker: by ID, the network whose labels were just read, never one
	// made under the same name since. Podman: by name, since by ID it
	// removes a network its running containers use (by name it refuses,
	// as Docker does); the name is looked up again there, a window no
	// call of Podman's closes.
	target := info.ID
	if d.engine.Podman() || target == "" {
		target = info.Name
	}
	if err := d.cli.NetworkRemove(ctx, target); err != nil {
		err = translate(err)
		if cerrdefs.IsPermissionDenied(err) || strings.Contains(err.Error(), "active endpoints") || strings.Contains(err.Error(), "is being used") {
			// What the engine answers for a network containers still use.
			err = classify(err, ErrConflict)
		}
		if !IsNotFound(err) {
			return fmt.Errorf("remove network %q: %w", name, err)
		}
	}
	d.log.Debug("removed network", "network", name)
	return nil
}

// inspectNetwork inspects the network named name: the engine also
// answers for an ID or a unique ID prefix, which is taken as not found
// (a network named after another's ID prefix is not that network).
func (d *Docker) inspectNetwork(ctx context.Context, name string) (network.Inspect, error) {
	info, err := d.cli.NetworkInspect(ctx, name, network.InspectOptions{})
	if err != nil {
		return info, translate(err)
	}
	if info.Name != name {
		return network.Inspect{}, classify(fmt.Errorf("network %q: the engine answered for network %q (an ID prefix)", name, info.Name), ErrNotFound)
	}
	return info, nil
}

// multiEndpointAPI is the first Engine API version whose container
// create takes several networks' endpoints (Docker 25); an engine spoken
// to in an older version refuses more than one.
const multiEndpointAPI = "1.44"

// splitNetworks splits the networks a container joins into those it is
// created on and those it is connected to right after, one call each:
// all at create when the API version spoken with the engine (negotiated)
// takes several endpoints there, else only the first. Podman keeps the
// connects whatever version it reports (5.8 reports 1.44): its
// compatible API's create with several endpoints is not proven to keep
// each one's aliases and addresses. The endpoints are the same either
// way (endpoint).
func (d *Docker) splitNetworks(nets []NetworkSpec) (atCreate, after []NetworkSpec) {
	if len(nets) <= 1 || (!d.engine.Podman() && versions.GreaterThanOrEqualTo(d.cli.ClientVersion(), multiEndpointAPI)) {
		return nets, nil
	}
	return nets[:1], nets[1:]
}

// networkingConfig is the create request's endpoints on nets; nil when
// there are none.
func networkingConfig(nets []NetworkSpec) *network.NetworkingConfig {
	if len(nets) == 0 {
		return nil
	}
	cfg := &network.NetworkingConfig{EndpointsConfig: make(map[string]*network.EndpointSettings, len(nets))}
	for _, n := range nets {
		cfg.EndpointsConfig[n.Name] = endpoint(n)
	}
	return cfg
}

// connectNetworks joins created container id to nets, one connect each
// (for the networks splitNetworks leaves out of the create).
func (d *Docker) connectNetworks(ctx context.Context, id string, nets []NetworkSpec) error {
	for _, n := range nets {
		if err := d.cli.NetworkConnect(ctx, n.Name, id, endpoint(n)); err != nil {
			return fmt.Errorf("connect to network %q: %w", n.Name, translate(err))
		}
	}
	return nil
}

// ListNetworks returns the names of this instance's networks, with one
// engine call.
func (d *Docker) ListNetworks(ctx context.Context) ([]string, error) {
	list, err := d.cli.NetworkList(ctx, network.ListOptions{Filters: d.ownFilter()})
	if err != nil {
		return nil, fmt.Errorf("list networks of instance %q: %w", d.instance, translate(err))
	}
	names := make([]string, 0, len(list))
	for _, n := range list {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names, nil
}
