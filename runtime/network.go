package runtime

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/docker/docker/api/types/network"
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
}

// endpoint is the container's settings on network n.
func endpoint(n NetworkSpec) *network.EndpointSettings {
	e := &network.EndpointSettings{Aliases: n.Aliases}
	if n.IPv4Address != "" {
		e.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: n.IPv4Address}
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
	l := maps.Clone(labels)
	if l == nil {
		l = map[string]string{}
	}
	l[LabelManaged] = "true"
	l[LabelInstance] = d.instance
	// The client asks the engine (API < 1.44) to refuse a duplicate name,
	// so two pods creating one network at once make one network.
	opts := network.CreateOptions{Driver: "bridge", Internal: n.Internal, Labels: l}
	if n.Subnet != "" {
		opts.IPAM = &network.IPAM{Driver: "default", Config: []network.IPAMConfig{{Subnet: n.Subnet, Gateway: n.Gateway, IPRange: n.IPRange}}}
	}
	_, err := d.cli.NetworkCreate(ctx, n.Name, opts)
	if err == nil {
		d.log.Debug("created network", "network", n.Name)
		return nil
	}
	if err := translate(err); !IsConflict(err) {
		return fmt.Errorf("create network %q: %w", n.Name, err)
	}
	return d.checkNetwork(ctx, n)
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
		if info.Internal != n.Internal {
			return fmt.Errorf("network %q: %w", n.Name, classify(fmt.Errorf("exists with internal %v, declared %v (another pod declares it otherwise, or it changed: remove its pods to make it anew)", info.Internal, n.Internal), ErrConflict))
		}
		if n.Subnet != "" && !hasSubnet(info, n, d.engine.Podman()) {
			return fmt.Errorf("network %q: %w", n.Name, classify(fmt.Errorf("exists with IPAM %+v, declared subnet %s gateway %q ipRange %q (it changed: remove its pods to make it anew)", info.IPAM.Config, n.Subnet, n.Gateway, n.IPRange), ErrConflict))
		}
		return nil
	}
	return fmt.Errorf("network %q: %w", n.Name,
		classify(fmt.Errorf("exists and does not belong to hostlet instance %q (declare it external to join it)", d.instance), ErrConflict))
}

// hasSubnet reports whether the network has n's IPAM settings (the
// engine fills in a gateway when none is given). rangeUnreported: the
// engine never reports an IPRange (Podman: its compatible API leaves it
// out of the answer although the network has it), so a missing one is
// unknown, not different.
func hasSubnet(info network.Inspect, n NetworkSpec, rangeUnreported bool) bool {
	for _, c := range info.IPAM.Config {
		sameRange := c.IPRange == n.IPRange || rangeUnreported && c.IPRange == ""
		if c.Subnet == n.Subnet && (n.Gateway == "" || c.Gateway == n.Gateway) && sameRange {
			return true
		}
	}
	return false
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

// connectNetworks joins container id to every network after the first
// (API 1.41 takes one endpoint at create).
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
