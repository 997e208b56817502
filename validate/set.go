package validate

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"path"
	"slices"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
)

// Source is one source's manifests as Set takes them: the source's
// snapshot (an alias: manifest.Snapshot is the one snapshot type).
type Source = manifest.Snapshot

// Rejection is a manifest that will not be applied, with every reason.
type Rejection struct {
	ID      string          `json:"id"`
	Source  string          `json:"source"`
	Origin  manifest.Origin `json:"origin"`
	Reasons []string        `json:"reasons"`
	// Errors holds the same reasons as structured errors.
	Errors []*manifest.Error `json:"-"`
}

// Result is the outcome of checking a set of sources.
type Result struct {
	// Accepted manifests, in order: sources as given, then each source's order.
	Accepted []manifest.Sourced
	// Rejected manifests, in the same order.
	Rejected []Rejection
	// Elsewhere are the manifests whose nodeSelector this host's labels
	// do not match (Options.HostLabels): not for this host, neither
	// checked nor applied, a pod of theirs running here removed.
	Elsewhere []Elsewhere
}

// Elsewhere is a manifest for other hosts, and why.
type Elsewhere struct {
	ID     string          `json:"id"`
	Source string          `json:"source"`
	Origin manifest.Origin `json:"origin"`
	// Reason names the first label of its nodeSelector this host lacks.
	Reason string `json:"reason"`
}

// ArchLabel is the host label of the engine's architecture, known only
// from the engine (Policy.EnginePlatform).
const ArchLabel = "kubernetes.io/arch"

// String is the line validate and diff print: "source:file: not for this
// host: ID: why".
func (e Elsewhere) String() string {
	return fmt.Sprintf("%s: not for this host: %s: %s", e.Origin, e.ID, e.Reason)
}

// Selects reports whether nodeSelector sel matches host labels host; when
// not, why (the first label missing or different, by key).
func Selects(sel, host map[string]string) (bool, string) {
	for _, k := range sortedKeys(sel) {
		got, ok := host[k]
		switch {
		case !ok && k == ArchLabel:
			return false, fmt.Sprintf("nodeSelector %s=%s: this host's architecture is not known here (it is read from its engine)", k, sel[k])
		case !ok:
			return false, fmt.Sprintf("nodeSelector %s=%s: this host has no label %s", k, sel[k], k)
		case got != sel[k]:
			return false, fmt.Sprintf("nodeSelector %s=%s: this host has %s=%s", k, sel[k], k, got)
		}
	}
	return true, ""
}

// selects is Selects against the host's labels, its engine's
// architecture among them when known; every pod is for a host not known
// (HostLabels nil).
func (o Options) selects(sel map[string]string) (bool, string) {
	if o.HostLabels == nil || len(sel) == 0 {
		return true, ""
	}
	host := o.HostLabels
	if _, arch, ok := strings.Cut(o.Policy.EnginePlatform, "/"); ok && host[ArchLabel] == "" {
		host = maps.Clone(host)
		arch, _, _ = strings.Cut(arch, "/")
		host[ArchLabel] = arch
	}
	return Selects(sel, host)
}

// Err returns every rejection reason as one error, or nil.
func (r Result) Err() error {
	var errs *multierror.Error
	for _, rj := range r.Rejected {
		for _, e := range rj.Errors {
			errs = multierror.Append(errs, e)
		}
	}
	return errs.ErrorOrNil()
}

type binding struct {
	ip    netip.Addr // zero value: all addresses
	port  int
	proto string
}

// String renders the binding as 8080/TCP, or 127.0.0.1:8080/TCP when it
// is bound to one address.
func (b binding) String() string {
	if b.ip.IsValid() {
		return fmt.Sprintf("%s/%s", netip.AddrPortFrom(b.ip, uint16(b.port)), b.proto)
	}
	return fmt.Sprintf("%d/%s", b.port, b.proto)
}

func (b binding) conflicts(o binding) bool {
	if b.port != o.port || b.proto != o.proto {
		return false
	}
	return !b.ip.IsValid() || !o.ip.IsValid() || b.ip == o.ip
}

type portProto struct {
	port  int
	proto string
}

type claim struct {
	binding
	pod    string
	source string
}

// Set checks every manifest of the given sources, in order: field rules and
// duplicate IDs first, then host-port conflicts among the valid ones. The
// first source (and within it the first manifest) to declare an ID wins,
// valid or not; the first valid one to bind a host port wins; every later
// one is rejected. The outcome depends only on the order given, never on
// map order.
func Set(sources []manifest.Snapshot, opts Options) Result {
	var res Result
	ids := map[string]manifest.Sourced{}
	// claims holds the bindings of accepted pods by port and protocol, each
	// list in order; a map only for lookup, so checking n ports costs O(n),
	// and order alone decides.
	claims := map[portProto][]claim{}
	// nets holds the first accepted declaration of each network.
	nets := map[string]netClaim{}
	// names holds the container names accepted pods choose; data the
	// data folders they mount.
	names := map[string]claim{}
	data := newDataClaims()
	for _, src := range sources {
		for _, s := range src.Manifests {
			if s.Origin.Source == "" {
				s.Origin.Source = src.Name
			}
			// The first manifest to declare an id owns it even when it is
			// invalid: a later source must not take a pod over because the
			// owner's manifest has a typo.
			id := s.Manifest.ID
			first, dup := ids[id]
			if !dup && id != "" {
				ids[id] = s
			}
			// A pod for other hosts still owns its id here: a later source
			// must not take it over because its nodeSelector has a typo.
			if ok, why := opts.selects(s.Manifest.NodeSelector); !ok {
				res.Elsewhere = append(res.Elsewhere, Elsewhere{ID: id, Source: s.Origin.Source, Origin: s.Origin, Reason: why})
				continue
			}
			err := opts.check(s)
			if dup {
				err = multierror.Append(err, manifest.Errorf(s.Origin, id, "id",
					"duplicate id: already declared by manifest %d of %s (the first source, file and manifest to declare an id wins)", first.Origin.Index+1, first.Origin))
			}
			if err != nil {
				res.Rejected = append(res.Rejected, rejection(s, err))
				continue
			}
			errs := networkConflicts(s, nets)
			errs = containerNameConflicts(s, names, errs)
			errs = data.conflicts(s, errs)
			mine, errs := hostPortConflicts(s, claims, errs)
			if errs != nil {
				res.Rejected = append(res.Rejected, rejection(s, errs))
				continue
			}
			for key, cs := range mine {
				claims[key] = append(claims[key], cs...)
			}
			claimNetworks(s, nets)
			claimContainerNames(s, names)
			data.claim(s)
			res.Accepted = append(res.Accepted, s)
		}
	}
	return rejectNetworkOf(rejectCycles(res))
}

// containerNameConflicts returns errs with a reason added for every
// container name manifest s chooses that an accepted pod (names) or s
// itself chose already: the engine holds one container per name.
func containerNameConflicts(s manifest.Sourced, names map[string]claim, errs *multierror.Error) *multierror.Error {
	id := s.Manifest.ID
	hide := hiderOf(s)
	mine := map[string]bool{}
	for ci, c := range s.Manifest.Containers {
		n := c.ContainerName
		if n == "" {
			continue
		}
		field := s.Field(fmt.Sprintf("containers[%d].containerName", ci))
		if other, taken := names[n]; taken {
			errs = multierror.Append(errs, hide.errorf(s.Origin, id, field, "container name %q is already taken by pod %s (%s)", n, other.pod, other.source))
		} else if mine[n] {
			errs = multierror.Append(errs, hide.errorf(s.Origin, id, field, "container name %q is given twice in this pod", n))
		}
		mine[n] = true
	}
	return errs
}

// dataClaims are the data folders accepted pods mount (claimed with the
// pod and its project folder, see projectFolder), and the projects (a
// data folder's first element) by the project folder whose pods mount
// them.
type dataClaims struct {
	folders map[string]claim
	// within holds every folder that holds a claimed folder (its
	// ancestors), with the first claimed folder below it.
	within   map[string]dataClaim
	projects map[string]string
}

func newDataClaims() *dataClaims {
	return &dataClaims{folders: map[string]claim{}, within: map[string]dataClaim{}, projects: map[string]string{}}
}

// conflicts returns errs with a reason added for every data folder of s
// that lies inside another one, or holds another (an accepted pod's or
// its own), or belongs to a project whose data folders the pods of
// another project folder mount (two projects of one name). A folder inside another is refused because the engine
// follows links in a bind source on the host: a container mounting the
// outer folder could make the inner one a link to any host folder, which
// the inner one's container would mount at its next start.
func (d *dataClaims) conflicts(s manifest.Sourced, errs *multierror.Error) *multierror.Error {
	id, hide := s.Manifest.ID, hiderOf(s)
	mine := newDataClaims()
	for vi, v := range s.Manifest.Volumes {
		if v.DataFolder == "" {
			continue
		}
		field := s.Field(fmt.Sprintf("volumes[%d].dataFolder", vi))
		project, _, _ := strings.Cut(v.DataFolder, "/")
		if owner, ok := d.projects[project]; ok && owner != projectFolder(s.Origin) {
			errs = multierror.Append(errs, hide.errorf(s.Origin, id, field, "data folder %s: the data folders of project %s are those of the project in %s (give this project another name)", v.DataFolder, project, owner))
			continue
		}
		for _, set := range []*dataClaims{d, mine} {
			if other, inner := set.nesting(v.DataFolder); inner != "" {
				errs = multierror.Append(errs, hide.errorf(s.Origin, id, field,
					"data folder %s %s data folder %s of pod %s: a container could turn the inner one into a link the engine follows on the host; give each its own folder (./db beside ./data)", v.DataFolder, inner, other.path, other.pod))
				break
			}
		}
		mine.add(v.DataFolder, claim{pod: id, source: projectFolder(s.Origin)})
	}
	return errs
}

// nesting returns the claimed folder that holds p, or that p holds, and
// which it is ("" when none).
func (d *dataClaims) nesting(p string) (dataClaim, string) {
	for a := path.Dir(p); a != "."; a = path.Dir(a) {
		if c, ok := d.folders[a]; ok {
			return dataClaim{claim: c, path: a}, "lies inside"
		}
	}
	if c, ok := d.within[p]; ok {
		return c, "holds"
	}
	return dataClaim{}, ""
}

// dataClaim is a claimed data folder and its path.
type dataClaim struct {
	claim
	path string
}

// add records folder p, claimed by c.
func (d *dataClaims) add(p string, c claim) {
	if _, ok := d.folders[p]; !ok {
		d.folders[p] = c
	}
	for a := path.Dir(p); a != "."; a = path.Dir(a) {
		if _, ok := d.within[a]; !ok {
			d.within[a] = dataClaim{claim: c, path: p}
		}
	}
	project, _, _ := strings.Cut(p, "/")
	if _, ok := d.projects[project]; !ok {
		d.projects[project] = c.source
	}
}

// projectFolder names where a manifest comes from for its data folders:
// its source and the folder of its file (a Compose project's folder).
func projectFolder(o manifest.Origin) string {
	return o.Source + ":" + path.Dir(o.File)
}

// claim records the data folders accepted manifest s mounts.
func (d *dataClaims) claim(s manifest.Sourced) {
	for _, v := range s.Manifest.Volumes {
		if v.DataFolder != "" {
			d.add(v.DataFolder, claim{pod: s.Manifest.ID, source: projectFolder(s.Origin)})
		}
	}
}

// claimContainerNames records the container names accepted manifest s
// chooses in names.
func claimContainerNames(s manifest.Sourced, names map[string]claim) {
	for _, c := range s.Manifest.Containers {
		if c.ContainerName != "" {
			names[c.ContainerName] = claim{pod: s.Manifest.ID, source: s.Origin.Source}
		}
	}
}

// hostPortConflicts returns the host ports manifest s binds, by port and
// protocol, and errs with a reason added for every one already bound by
// an accepted pod (claims) or earlier in s itself.
func hostPortConflicts(s manifest.Sourced, claims map[portProto][]claim, errs *multierror.Error) (map[portProto][]claim, *multierror.Error) {
	id := s.Manifest.ID
	hide := hiderOf(s)
	mine := map[portProto][]claim{}
	for ci, c := range s.Manifest.Containers {
		for pi, p := range c.Ports {
			b, bound := hostBinding(p, s.Manifest.HostNetwork)
			if !bound {
				continue
			}
			field := fmt.Sprintf("containers[%d].ports[%d].hostPort", ci, pi)
			key := portProto{b.port, b.proto}
			for _, other := range slices.Concat(claims[key], mine[key]) {
				if !b.conflicts(other.binding) {
					continue
				}
				if other.pod == id {
					errs = multierror.Append(errs, hide.errorf(s.Origin, id, s.Field(field), "host port %s is bound twice in this pod", b))
				} else {
					errs = multierror.Append(errs, hide.errorf(s.Origin, id, s.Field(field), "host port %s already bound by pod %s (%s)", b, other.pod, other.source))
				}
				break
			}
			mine[key] = append(mine[key], claim{binding: b, pod: id, source: s.Origin.Source})
		}
	}
	return mine, errs
}

// hostBinding returns the host binding port p makes (its protocol TCP
// unless given, its address none for an unspecified one), or false when
// it binds no host port. On the host's network, a container port is the
// host's.
func hostBinding(p manifest.Port, hostNetwork bool) (binding, bool) {
	if p.HostPort == 0 && hostNetwork {
		p.HostPort = p.ContainerPort
	}
	if p.HostPort == 0 {
		return binding{}, false
	}
	b := binding{port: p.HostPort, proto: strings.ToUpper(p.Protocol)}
	if b.proto == "" {
		b.proto = "TCP"
	}
	if p.HostIP != "" {
		b.ip, _ = netip.ParseAddr(p.HostIP)
		b.ip = b.ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
		if b.ip.IsUnspecified() {
			b.ip = netip.Addr{}
		}
	}
	return b, true
}

// claimNetworks records the networks of accepted manifest s in nets: the
// first declaration of each name, and every fixed address it takes.
func claimNetworks(s manifest.Sourced, nets map[string]netClaim) {
	id := s.Manifest.ID
	for _, n := range s.Manifest.Networks {
		if _, ok := nets[n.Name]; !ok {
			nets[n.Name] = netClaim{n: n, pod: id, source: s.Origin.Source, hidden: hiddenOnly(s)}
		}
		for _, a := range []string{n.IPv4Address, n.IPv6Address} {
			if a != "" {
				nets[addressKey(n.Name, a)] = netClaim{n: n, pod: id, source: s.Origin.Source, hidden: hiddenOnly(s)}
			}
		}
	}
}

// netClaim is the first accepted declaration of a network.
type netClaim struct {
	n           manifest.Network
	pod, source string
	// hidden holds the declaring pod's hidden values: an error quoting
	// its declaration leaves them out.
	hidden manifest.Sourced
}

// addressKey is the claim of a pod's address on a network (no network is
// named with a NUL); the address in its one written form (fd00::1, not
// fd00:0::1).
func addressKey(network, address string) string {
	if a, err := netip.ParseAddr(address); err == nil {
		address = a.String()
	}
	return network + "\x00" + address
}

// sameIPAM reports whether a and b declare one network's pools, IPv6 and
// driver options alike.
func sameIPAM(a, b manifest.Network) bool {
	return a.Subnet == b.Subnet && a.Gateway == b.Gateway && a.IPRange == b.IPRange &&
		a.EnableIPv6 == b.EnableIPv6 && a.IPv6Subnet == b.IPv6Subnet && a.IPv6Gateway == b.IPv6Gateway && a.IPv6IPRange == b.IPv6IPRange &&
		maps.Equal(a.DriverOptions, b.DriverOptions)
}

// networkConflicts refuses a network s declares otherwise (internal,
// external) than the pod that declared it first: one network is made
// once, as one declaration says.
func networkConflicts(s manifest.Sourced, nets map[string]netClaim) *multierror.Error {
	var errs *multierror.Error
	for i, n := range s.Manifest.Networks {
		first, ok := nets[n.Name]
		hide := hiderOf(s, first.hidden)
		if ok && (first.n.Internal != n.Internal || first.n.External != n.External) {
			errs = multierror.Append(errs, hide.errorf(s.Origin, s.Manifest.ID, s.Field(fmt.Sprintf("networks[%d]", i)),
				"network %q is declared internal %v, external %v by pod %s (%s): declare it alike", n.Name, first.n.Internal, first.n.External, first.pod, first.source))
		}
		if ok && !sameIPAM(first.n, n) {
			errs = multierror.Append(errs, hide.errorf(s.Origin, s.Manifest.ID, s.Field(fmt.Sprintf("networks[%d]", i)),
				"network %q is declared with subnet %q, gateway %q, ipRange %q, enableIPv6 %v, ipv6Subnet %q, ipv6Gateway %q, ipv6IPRange %q, driverOptions %s by pod %s (%s): declare it alike",
				n.Name, first.n.Subnet, first.n.Gateway, first.n.IPRange, first.n.EnableIPv6, first.n.IPv6Subnet, first.n.IPv6Gateway, first.n.IPv6IPRange, hide.optionsText(first.n.DriverOptions), first.pod, first.source))
		}
		for _, a := range []struct{ field, addr string }{{"ipv4Address", n.IPv4Address}, {"ipv6Address", n.IPv6Address}} {
			if a.addr == "" {
				continue
			}
			if other, taken := nets[addressKey(n.Name, a.addr)]; taken {
				errs = multierror.Append(errs, hiderOf(s, other.hidden).errorf(s.Origin, s.Manifest.ID, s.Field(fmt.Sprintf("networks[%d].%s", i, a.field)),
					"%s on network %q is already pod %s's (%s)", a.addr, n.Name, other.pod, other.source))
			}
		}
	}
	return errs
}

// rejectCycles moves the accepted pods on a cycle of dependsOn (a waits
// for b, b for a) to the rejected ones, naming the cycle: they would wait
// for each other forever.
func rejectCycles(res Result) Result {
	deps := map[string][]string{}
	for _, s := range res.Accepted {
		for _, d := range s.Manifest.Dependencies() {
			deps[s.Manifest.ID] = append(deps[s.Manifest.ID], d.Pod)
		}
	}
	cycles := manifest.DependencyCycles(deps)
	if len(cycles) == 0 {
		return res
	}
	kept := res.Accepted[:0:0]
	for _, s := range res.Accepted {
		c, ok := cycles[s.Manifest.ID]
		if !ok {
			kept = append(kept, s)
			continue
		}
		res.Rejected = append(res.Rejected, rejection(s, manifest.Errorf(s.Origin, s.Manifest.ID, s.Field("dependsOn"), "dependency cycle %s: these pods would wait for each other forever", c)))
	}
	res.Accepted = kept
	return res
}

// rejection is the one place a manifest's errors leave validation: every
// reason scrubbed of its hidden values and secrets (Scrub).
func rejection(s manifest.Sourced, err error) Rejection {
	r := Rejection{ID: s.Manifest.ID, Source: s.Origin.Source, Origin: s.Origin}
	for _, e := range Scrub(s, Flatten(err)) {
		r.Errors = append(r.Errors, e)
		r.Reasons = append(r.Reasons, e.Error())
	}
	return r
}

// Flatten returns the *manifest.Error values inside err (a single error or
// a *multierror.Error, nested or not), in order. Other errors are wrapped
// into a *manifest.Error with only a detail.
func Flatten(err error) []*manifest.Error {
	if err == nil {
		return nil
	}
	var merr *multierror.Error
	if errors.As(err, &merr) {
		var out []*manifest.Error
		for _, e := range merr.Errors {
			out = append(out, Flatten(e)...)
		}
		return out
	}
	var me *manifest.Error
	if errors.As(err, &me) {
		return []*manifest.Error{me}
	}
	return []*manifest.Error{{Detail: err.Error()}}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
