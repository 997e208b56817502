package validate

import (
	"fmt"

	"github.com/hostlet/hostlet/manifest"
)

// networkOf checks a pod that joins another pod's network namespace: a
// pod of one container (whose network is that namespace), with nothing
// of a network of its own, which the engine refuses with a joined
// namespace or which would be silently the other pod's.
func (c *checker) networkOf(m manifest.Manifest) {
	if m.NetworkOf == "" {
		return
	}
	switch {
	case dnsSubdomain(m.NetworkOf) != "":
		c.add("networkOf", "%q %s", m.NetworkOf, dnsSubdomain(m.NetworkOf))
	case m.NetworkOf == m.ID:
		c.add("networkOf", "a pod cannot join its own network")
	}
	const why = "a pod on another pod's network has none of its own: set it on pod %s"
	if len(m.Containers) != 1 {
		c.add("networkOf", "a pod of %d containers: its containers share a network already; join another pod's with a pod of one container", len(m.Containers))
	}
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"hostNetwork", m.HostNetwork}, {"networks", len(m.Networks) > 0}, {"hostname", m.Hostname != ""}, {"domainname", m.Domainname != ""},
		{"extraHosts", len(m.ExtraHosts) > 0}, {"dns", len(m.DNS) > 0}, {"dnsSearch", len(m.DNSSearch) > 0},
	} {
		if f.set {
			c.add(f.field, why, m.NetworkOf)
		}
	}
	for i, ct := range m.Containers {
		if len(ct.Ports) > 0 {
			c.add(fmt.Sprintf("containers[%d].ports", i), "a pod on another pod's network publishes nothing: publish the ports on pod %s", m.NetworkOf)
		}
	}
}

// rejectNetworkOf moves the accepted pods that join the network of a pod
// that is not an accepted pod of their own source, that joins another's
// network itself, or that is on the host's network, to the rejected
// ones: the first has no network to join (or one another team's source
// controls), the second a chain the engine does not follow, the third
// the host's network without the pod asking for it.
func rejectNetworkOf(res Result) Result {
	accepted := map[string]manifest.Sourced{}
	for _, s := range res.Accepted {
		accepted[s.Manifest.ID] = s
	}
	kept := res.Accepted[:0:0]
	for _, s := range res.Accepted {
		q := s.Manifest.NetworkOf
		if q == "" {
			kept = append(kept, s)
			continue
		}
		target, ok := accepted[q]
		var why string
		switch {
		case !ok:
			why = fmt.Sprintf("pod %s is not an accepted pod of this host", q)
		case target.Origin.Source != s.Origin.Source:
			why = fmt.Sprintf("pod %s is of source %s: a pod joins the network of a pod of its own source only", q, target.Origin.Source)
		case target.Manifest.NetworkOf != "":
			why = fmt.Sprintf("pod %s joins the network of pod %s itself: join that one", q, target.Manifest.NetworkOf)
		case target.Manifest.HostNetwork:
			why = fmt.Sprintf("pod %s is on the host's network: set hostNetwork instead", q)
		default:
			kept = append(kept, s)
			continue
		}
		res.Rejected = append(res.Rejected, rejection(s, manifest.Errorf(s.Origin, s.Manifest.ID, s.Field("networkOf"), "%s", why)))
	}
	res.Accepted = kept
	return res
}
