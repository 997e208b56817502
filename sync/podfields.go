package sync

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// HostAddresser tells the host's address (status.hostIP).
type HostAddresser func(ctx context.Context) (string, error)

// resolveFields replaces, in spec's env values, command and args, each
// token of a field of the running pod (manifest.FieldToken) by the
// field's value, once the pod's network namespace holder runs.
func (ap *podApplication) resolveFields(ctx context.Context, spec *hruntime.ContainerSpec) error {
	value := func(path string) (string, error) { return ap.fieldValue(ctx, path) }
	for i, kv := range spec.Env {
		name, _, _ := strings.Cut(kv, "=")
		v, err := manifest.ExpandFields(kv, value)
		if err != nil {
			return fmt.Errorf("env %s: %w", name, err)
		}
		spec.Env[i] = v
	}
	var err error
	if spec.Command, err = expandAll(spec.Command, value); err != nil {
		return fmt.Errorf("command: %w", err)
	}
	if spec.Args, err = expandAll(spec.Args, value); err != nil {
		return fmt.Errorf("args: %w", err)
	}
	return nil
}

// expandAll is args with their field tokens expanded: a new slice when
// one has any (args may be the manifest's own).
func expandAll(args []string, value func(string) (string, error)) ([]string, error) {
	if !slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, manifest.FieldTokenPrefix) }) {
		return args, nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		v, err := manifest.ExpandFields(a, value)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// fieldValue is the value of a field of the running pod: its address
// (the infra container's, or the one whose network it joins; the host's
// on the host's network, as in Kubernetes), or the host's. Each is asked
// for once an apply of the pod, however many tokens name it.
func (ap *podApplication) fieldValue(ctx context.Context, path string) (string, error) {
	if v, ok := ap.fields[path]; ok {
		return v, nil
	}
	v, err := ap.askField(ctx, path)
	if err != nil {
		return "", err
	}
	if ap.fields == nil {
		ap.fields = map[string]string{}
	}
	ap.fields[path] = v
	return v, nil
}

// labelPodIP labels spec, of container c, with the pod's address when c
// reads it (hruntime.LabelPodIP), so that a changed address recreates it.
func (ap *podApplication) labelPodIP(ctx context.Context, spec *hruntime.ContainerSpec, c manifest.Container) error {
	if !manifest.ReadsField(c, manifest.FieldPodIP) {
		return nil
	}
	ip, err := ap.fieldValue(ctx, manifest.FieldPodIP)
	if err != nil {
		return err
	}
	spec.Labels = maps.Clone(spec.Labels)
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	spec.Labels[hruntime.LabelPodIP] = ip
	return nil
}

// askField asks the engine (or the host) for field path.
func (ap *podApplication) askField(ctx context.Context, path string) (string, error) {
	switch {
	case path == manifest.FieldHostIP || (path == manifest.FieldPodIP && ap.m.HostNetwork):
		return ap.hostAddress(ctx)
	case path == manifest.FieldPodIP && ap.infraID != "":
		return ap.containerAddress(ctx, ap.infraID)
	case path == manifest.FieldPodIP:
		return "", errors.New("the pod has no container holding its network to give an address")
	}
	return "", errors.New("a field hostlet does not give")
}

// hookAddress is the address an httpGet hook of container id reaches:
// its pod's (the infra container's, or its own), loopback on the host's
// network (as probes reach it).
func (ap *podApplication) hookAddress(ctx context.Context, id string) (string, error) {
	switch {
	case ap.m.HostNetwork:
		return "127.0.0.1", nil
	case ap.infraID != "":
		// The pod's address, asked once an apply (fieldValue).
		return ap.fieldValue(ctx, manifest.FieldPodIP)
	}
	return ap.containerAddress(ctx, id)
}

// runPostStart runs postStart hook h of container id (whose ports are
// ports), just started: an httpGet reaches the pod's address, and a
// refused connection (the container does not listen yet) is tried again
// while it runs, until ctx ends.
func (ap *podApplication) runPostStart(ctx context.Context, id string, h manifest.Hook, ports []manifest.Port) error {
	if h.HTTPGet == nil {
		return runHook(ctx, ap.ex, id, "", h)
	}
	ip, err := ap.hookAddress(ctx, id)
	if err != nil {
		return err
	}
	// A port's name is the container's port of that name.
	addr, err := probeAddr(probeTarget{ip: ip, ports: ports}, h.HTTPGet.Host, h.HTTPGet.Port)
	if err != nil {
		return err
	}
	get := *h.HTTPGet
	get.Port, get.Host = addr[strings.LastIndexByte(addr, ':')+1:], ""
	h.HTTPGet = &get
	wait := 50 * time.Millisecond
	for {
		err := runHook(ctx, ap.ex, id, ip, h)
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		if ap.in != nil {
			if d, ierr := ap.in.Inspect(ctx, id); ierr == nil && !d.Running {
				return fmt.Errorf("the container ended before its hook reached it: %w", err)
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// shortID is id as docker ps shows it.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// containerAddress is running container id's address, from the engine.
func (ap *podApplication) containerAddress(ctx context.Context, id string) (string, error) {
	if ap.in == nil {
		return "", errors.New("this engine does not tell a container's address")
	}
	d, err := ap.in.Inspect(ctx, id)
	if err != nil {
		return "", fmt.Errorf("the pod's address: %w", err)
	}
	if d.IP == "" {
		return "", fmt.Errorf("container %s has no address (is it on a network?)", shortID(id))
	}
	return d.IP, nil
}

// hostAddress is the host's address: ApplyOptions.HostAddress, else the
// source address of the host's default route.
func (ap *podApplication) hostAddress(ctx context.Context) (string, error) {
	if ap.opts.HostAddress != nil {
		return ap.opts.HostAddress(ctx)
	}
	return DefaultRouteAddress(ctx)
}

// routeProbes are addresses of documentation networks (RFC 5737, 3849):
// dialing one over UDP sends nothing, and picks the source address of the
// route to it, the default route's on a host with one.
var routeProbes = []string{"198.51.100.1:9", "[2001:db8::1]:9"}

// DefaultRouteAddress is the host's address: the source address of its
// default route (IPv4 first), as a kubelet's node address is the one of
// its default route's interface.
func DefaultRouteAddress(ctx context.Context) (string, error) {
	var d net.Dialer
	var errs []error
	for _, probe := range routeProbes {
		conn, err := d.DialContext(ctx, "udp", probe)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		local := conn.LocalAddr()
		conn.Close()
		if ap, err := netip.ParseAddrPort(local.String()); err == nil && !ap.Addr().IsUnspecified() {
			return ap.Addr().Unmap().String(), nil
		}
	}
	return "", fmt.Errorf("the host's address (status.hostIP): no default route: %w", errors.Join(errs...))
}
