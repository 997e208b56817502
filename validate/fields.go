package validate

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/distribution/reference"
	"github.com/hashicorp/go-multierror"
	"golang.org/x/net/http/httpguts"

	"github.com/hostlet/hostlet/imagepolicy"
	"github.com/hostlet/hostlet/manifest"
)

// ReservedLabelPrefix is the label prefix hostlet keeps for itself.
const ReservedLabelPrefix = "io.hostlet."

// MinMemory is the smallest memory limit Docker accepts.
const MinMemory = 6 << 20

// Options are the host settings some rules depend on.
type Options struct {
	// HostPathAllow lists the directories hostPath volumes must lie under.
	// Empty means no hostPath volume is allowed.
	HostPathAllow []string
	// DockerHost is the address of the engine hostlet drives (docker.host,
	// else DOCKER_HOST). When it is a unix:// address, its socket is refused
	// as a host path like /var/run/docker.sock and /run/docker.sock are.
	DockerHost string
	// ExternalVolumes and ExternalNetworks (the host config's
	// policy.externalVolumes, policy.externalNetworks) are the Docker
	// volumes and networks made outside hostlet that a pod may declare
	// external ("*": any). Empty: none, as another team's or instance's
	// volume holds data this host's manifests must not reach.
	ExternalVolumes  []string
	ExternalNetworks []string
	// StateDir is hostlet's state folder (its keys, sealed sets and the
	// files it mounts): no host path may be it, lie in it or hold it,
	// unless hostPathAllow lists it itself. Empty: not checked.
	StateDir string
	// DataDir is compose.dataDir (the pods' data folders): no host path
	// may be it, lie in it or hold it either (a link planted there would
	// redirect a data folder's mount). Empty: not checked.
	DataDir string
	// Policy is what a pod may take of the host (policy.privileged,
	// capabilities, hostNetwork, devices).
	Policy Policy
	// HostLabels are the host's labels (the host config's labels:, with
	// kubernetes.io/hostname, /os and /arch) that a pod's nodeSelector
	// must match for Set to take it; a pod that does not match is not
	// for this host (Result.Elsewhere). Nil: the host is not known (a
	// validate without a host config) and every pod is taken.
	HostLabels map[string]string
	// Checker, when set, is what Set checks each manifest's fields with
	// (a *Memo: a manifest is checked once, not at every merge); nil:
	// Manifest, every time.
	Checker Checker
}

// Checker checks the fields of one manifest, as Manifest does.
type Checker interface {
	Check(s manifest.Sourced, opts Options) error
}

// check checks s with o.Checker, else Manifest.
func (o Options) check(s manifest.Sourced) error {
	if o.Checker == nil {
		return Manifest(s, o)
	}
	return o.Checker.Check(s, o)
}

var (
	// hostLabelRE is a label of a host name (hostnameProblem).
	hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9_]([-A-Za-z0-9_]*[A-Za-z0-9_])?$`)
	// envNameRE is Kubernetes' rule: Compose files name variables such
	// as discovery.type.
	envNameRE   = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)
	portNameRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9]|-[a-z0-9])*$`)
	hasLetterRE = regexp.MustCompile(`[a-z]`)
	// dockerNameRE is what Docker accepts as a network name, and what a
	// DNS alias on it may be (Compose service names included).
	dockerNameRE      = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)
	restartEnum       = []string{manifest.RestartAlways, manifest.RestartOnFailure, manifest.RestartNever}
	rollbackEnum      = []string{manifest.RollbackAuto, manifest.RollbackNever, manifest.RollbackHold}
	fsGroupChangeEnum = []string{manifest.FSGroupChangeOnRootMismatch, manifest.FSGroupChangeAlways}
	pullEnum          = []string{manifest.PullAlways, manifest.PullIfNotPresent, manifest.PullNever}
	probeEnum         = []string{manifest.ProbeHTTP, manifest.ProbeTCP, manifest.ProbeExec, manifest.ProbeGRPC}
	protocolEnum      = []string{"TCP", "UDP"}
)

// checker collects the errors of one manifest.
type checker struct {
	origin manifest.Origin
	pod    string
	errs   *multierror.Error
	// src names fields as the manifest's author wrote them (Compose).
	src manifest.Sourced
	// hide are the values an error must not show (hidden.go).
	hide hider
}

func (c *checker) add(field, format string, args ...any) {
	c.errs = multierror.Append(c.errs, manifest.Errorf(c.origin, c.pod, c.hide.field(c.src.Field(field)), format, c.hide.args(args)...))
}

// Manifest checks every field rule of one manifest and returns all
// violations as a *multierror.Error of *manifest.Error, or nil.
func Manifest(s manifest.Sourced, opts Options) error {
	m := s.Manifest
	c := &checker{origin: s.Origin, pod: m.ID, src: s, hide: hiderOf(s)}
	for _, e := range s.Errors {
		// Name the manifest's origin as Set completed it.
		e := *e
		e.Origin = s.Origin
		c.errs = multierror.Append(c.errs, &e)
	}
	c.podFields(m)
	tokenErrs := manifest.FieldTokenErrors(m)
	for _, field := range slices.Sorted(maps.Keys(tokenErrs)) {
		c.add(field, "%s", tokenErrs[field])
	}
	volumes := c.volumes(m.Volumes, opts)
	c.networks(m.Networks, opts.ExternalNetworks, opts.Policy)
	c.hostNamespaces(m, opts.Policy)
	c.dependsOn(m.ID, m.DependsOn)
	c.namespace(m)
	c.networkOf(m)
	c.containers(m, volumes, opts)
	c.initContainers(m, volumes, opts)
	return c.errs.ErrorOrNil()
}

// podFields checks the pod's own scalar fields: version, id, restart
// policy, the durations, rollback, and that no label takes hostlet's
// reserved prefix.
func (c *checker) podFields(m manifest.Manifest) {
	switch m.Version {
	case "":
		c.add("version", "required (use %q)", manifest.Version)
	case manifest.Version:
	default:
		c.add("version", "%q is not supported (use %q)", m.Version, manifest.Version)
	}
	if m.ID == "" {
		c.add("id", "required")
	} else if msg := dnsSubdomain(m.ID); msg != "" {
		c.add("id", "%q %s", m.ID, msg)
	}
	c.enum("restartPolicy", m.RestartPolicy, restartEnum)
	c.seconds("terminationGracePeriodSeconds", m.TerminationGracePeriodSeconds)
	c.stopGrace("terminationGracePeriodSeconds", m.TerminationGracePeriodSeconds)
	c.seconds("minReadySeconds", m.MinReadySeconds)
	c.seconds("progressDeadlineSeconds", m.ProgressDeadlineSeconds)
	c.enum("rollback", m.Rollback, rollbackEnum)
	c.fsGroup(m)
	for _, k := range sortedKeys(m.Labels) {
		if strings.HasPrefix(k, ReservedLabelPrefix) {
			c.add(fmt.Sprintf("labels[%q]", k), "the prefix %q is reserved for hostlet", ReservedLabelPrefix)
		}
	}
	c.nodeSelector(m.NodeSelector)
}

// fsGroup checks the pod's fsGroup (a group id in Kubernetes' range) and
// its change policy, which means nothing without it.
func (c *checker) fsGroup(m manifest.Manifest) {
	if g := m.FSGroup; g != nil && (*g < 0 || *g > manifest.MaxFSGroup) {
		c.add("fsGroup", "%d is not a group id in 0..%d", *g, manifest.MaxFSGroup)
	}
	c.enum("fsGroupChangePolicy", m.FSGroupChangePolicy, fsGroupChangeEnum)
	if m.FSGroup == nil && m.FSGroupChangePolicy != "" {
		c.add("fsGroupChangePolicy", "needs fsGroup: without it no volume's ownership is changed")
	}
}

// MaxNodeSelector bounds a pod's nodeSelector.
const MaxNodeSelector = 64

// selectorKeyRE and selectorValueRE are Kubernetes' label syntax: an
// optional DNS subdomain prefix and "/", a name of at most 63; a value
// of at most 63, maybe empty.
var (
	selectorKeyRE   = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	selectorValueRE = regexp.MustCompile(`^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$`)
)

// nodeSelector checks a pod's nodeSelector: bounded, label syntax.
func (c *checker) nodeSelector(sel map[string]string) {
	if len(sel) > MaxNodeSelector {
		c.add("nodeSelector", "%d labels are over the limit of %d", len(sel), MaxNodeSelector)
		return
	}
	for _, k := range sortedKeys(sel) {
		switch {
		case len(k) > 317 || !selectorKeyRE.MatchString(k):
			c.add("nodeSelector", "%q is not a label key ([prefix/]name: letters, digits, '-', '_' and '.', a name of at most 63)", k)
		case !selectorValueRE.MatchString(sel[k]):
			c.add(fmt.Sprintf("nodeSelector[%q]", k), "%q is not a label value (letters, digits, '-', '_' and '.', at most 63)", sel[k])
		}
	}
}

// volumes checks the pod's volumes (a unique name, one kind, that kind's
// fields) and returns them by declared name, each with its files (nil
// for other volumes).
func (c *checker) volumes(vs []manifest.Volume, opts Options) map[string]*manifest.Files {
	volumes := map[string]*manifest.Files{}
	for i, v := range vs {
		f := fmt.Sprintf("volumes[%d]", i)
		c.dnsLabel(f+".name", v.Name)
		if _, dup := volumes[v.Name]; dup && v.Name != "" {
			c.add(f+".name", "duplicate volume name %q", v.Name)
		}
		volumes[v.Name] = v.Files
		switch {
		case kinds(v) > 1:
			c.add(f, "a volume is one of hostPath, dockerVolume, files and dataFolder")
		case v.DataFolder != "":
			c.dataFolder(f+".dataFolder", v.DataFolder)
		case v.Files != nil:
			c.files(f+".files", v.Files)
		case v.HostPath != "":
			c.hostPath(f+".hostPath", v.HostPath, opts)
		case v.DockerVolume != "":
			c.dockerVolume(f, v, opts)
		}
		if v.External && v.DockerVolume == "" {
			c.add(f+".external", "applies to a dockerVolume")
		}
	}
	return volumes
}

// relabels checks the SELinux relabelling of container ct's mounts: z or
// Z, never of a host path (it would change the folder for the host's own
// services and every other container).
func (c *checker) relabels(f string, m manifest.Manifest, ct manifest.Container) {
	for j, vm := range ct.VolumeMounts {
		if vm.SELinuxRelabel == "" {
			continue
		}
		vf := fmt.Sprintf("%s.volumeMounts[%d].selinuxRelabel", f, j)
		v, _ := m.Volume(vm.Name)
		switch {
		case vm.SELinuxRelabel != "z" && vm.SELinuxRelabel != "Z":
			c.add(vf, "%q is not z (shared) or Z (private)", vm.SELinuxRelabel)
		case v.HostPath != "":
			c.add(vf, "a host path is not relabelled: it would change the folder for the host's own services and every other container (label it yourself, or use a data folder or a volume)")
		case v.External:
			c.add(vf, "an external volume is not relabelled: made outside hostlet, it may be a host folder (o=bind) that the host's services and other containers use")
		case strings.ContainsAny(vm.MountPath+v.DataFolder, ":,"):
			c.add(vf, "a relabelled mount's path and data folder hold no ':' or ',' (the engine takes the relabelling only in the bind form, source:target:options)")
		}
	}
}

// MaxDataFolderPath bounds a data folder's path.
const MaxDataFolderPath = 1024

// dataFolder checks a data folder's path: relative, clean, inside the
// instance's data folder, bounded, printable.
func (c *checker) dataFolder(f, p string) {
	switch {
	case len(p) > MaxDataFolderPath:
		c.add(f, "is longer than %d bytes", MaxDataFolderPath)
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		c.add(f, "%q holds a control character or a backslash", p)
	case path.IsAbs(p) || p != path.Clean(p) || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		c.add(f, "%q is not a clean relative path inside the data folder (data/db, not /data, ./data or ../data)", p)
	case !strings.Contains(p, "/"):
		c.add(f, "%q: a data folder is <project>/<folder> (shop/data), the project's folder holding it", p)
	case slices.ContainsFunc(strings.Split(p, "/"), func(e string) bool { return len(e) > 255 }):
		c.add(f, "%q has a name longer than 255 bytes", p)
	}
}

// dockerVolume checks the Docker volume named by volume field f: its
// name, hostlet's own prefix, and that an external one is allowed.
func (c *checker) dockerVolume(f string, v manifest.Volume, opts Options) {
	switch {
	case c.dockerName(f+".dockerVolume", v.DockerVolume):
	case len(v.DockerVolume) < 2:
		c.add(f+".dockerVolume", "%q: a Docker volume's name has at least 2 characters", v.DockerVolume)
	case strings.HasPrefix(v.DockerVolume, "hostlet_"):
		c.add(f+".dockerVolume", "%q: the prefix hostlet_ is kept for the volumes hostlet makes for pods", v.DockerVolume)
	case v.External && !allowed(opts.ExternalVolumes, v.DockerVolume):
		c.add(f+".external", "volume %q is not this hostlet's: list it in the host config's policy.externalVolumes to mount it", v.DockerVolume)
	}
}

// containers checks the pod's containers: at least one, unique names,
// and each one's fields, host access and build.
func (c *checker) containers(m manifest.Manifest, volumes map[string]*manifest.Files, opts Options) {
	if len(m.Containers) == 0 {
		c.add("containers", "at least one container is required")
	}
	set := newContainerSet()
	for i, ct := range m.Containers {
		f := fmt.Sprintf("containers[%d]", i)
		c.anyContainer(f, m, ct, volumes, opts, set)
		for j, p := range ct.Ports {
			if p.RandomHostPort && m.HostNetwork {
				c.add(fmt.Sprintf("%s.ports[%d].randomHostPort", f, j), "on the host's network the container port is the host's: nothing is published")
			}
		}
		c.build(f, ct, opts.Policy)
	}
}

// containerSet is what the checks of one list of a pod's containers
// share: the names taken, and the port names and container ports seen.
type containerSet struct {
	names                     map[string]bool
	portNames, containerPorts map[string]string
}

func newContainerSet() *containerSet {
	return &containerSet{names: map[string]bool{}, portNames: map[string]string{}, containerPorts: map[string]string{}}
}

// anyContainer checks container ct (at f) of pod m as every container,
// init containers too, is checked: its name (a DNS label no other
// container of set has), its fields, relabels, platform and host access.
func (c *checker) anyContainer(f string, m manifest.Manifest, ct manifest.Container, volumes map[string]*manifest.Files, opts Options, set *containerSet) {
	c.dnsLabel(f+".name", ct.Name)
	if set.names[ct.Name] && ct.Name != "" {
		c.add(f+".name", "duplicate container name %q", ct.Name)
	}
	set.names[ct.Name] = true
	c.container(f, ct, volumes, set.portNames, set.containerPorts)
	c.relabels(f, m, ct)
	if ct.Platform != "" {
		c.platform(f+".platform", ct.Platform, opts.Policy.EnginePlatform)
	}
	c.hostAccess(f, ct, opts.Policy, m.HasInfra(), m.HostNetwork, m.HostIPC)
}

// initContainers checks the pod's init containers as app containers,
// their names unique among all the pod's containers, and that none has
// what only a long-running container has: ports, probes, a healthcheck,
// lifecycle hooks, a chosen name, or a build (not yet).
func (c *checker) initContainers(m manifest.Manifest, volumes map[string]*manifest.Files, opts Options) {
	if len(m.InitContainers) == 0 {
		return
	}
	if m.NetworkOf != "" {
		c.add("initContainers", "a pod that joins another pod's network (networkOf) has one container and no init containers")
	}
	// Init containers and containers share one set of names.
	set := newContainerSet()
	for _, ct := range m.Containers {
		set.names[ct.Name] = true
	}
	for i, ct := range m.InitContainers {
		f := fmt.Sprintf("initContainers[%d]", i)
		c.anyContainer(f, m, ct, volumes, opts, set)
		for _, only := range []struct {
			field string
			set   bool
		}{
			{"ports", len(ct.Ports) > 0}, {"livenessProbe", ct.LivenessProbe != nil}, {"readinessProbe", ct.ReadinessProbe != nil},
			{"startupProbe", ct.StartupProbe != nil}, {"healthcheck", ct.Healthcheck != nil}, {"lifecycle", ct.Lifecycle != nil},
			{"containerName", ct.ContainerName != ""},
		} {
			if only.set {
				c.add(f+"."+only.field, "an init container runs to completion before the app containers start: it has no %s", only.field)
			}
		}
		if ct.Build != nil {
			c.add(f+".build", "an init container's image is not built by hostlet yet: give an image built beforehand")
		}
	}
}

// ipam checks network f's IPv4 pool and the pod's address on it (pool).
func (c *checker) ipam(f string, n manifest.Network) {
	c.pool(f, addressPool{family: "IPv4", example: "10.5.0.0/24", is: netip.Addr.Is4,
		subnetKey: "subnet", gatewayKey: "gateway", rangeKey: "ipRange", addrKey: "ipv4Address",
		subnet: n.Subnet, gateway: n.Gateway, ipRange: n.IPRange, addr: n.IPv4Address}, n.External)
}

// addressPool is one family's IPAM settings of a network and the pod's
// address on it, with the keys that name them.
type addressPool struct {
	family, example                          string
	is                                       func(netip.Addr) bool
	subnetKey, gatewayKey, rangeKey, addrKey string
	subnet, gateway, ipRange, addr           string
}

// pool checks network f's pool p (of an external network when external):
// a subnet of the family, and within it the gateway, the range and the
// pod's address, which needs the subnet (the engine gives a chosen
// address only on a network whose subnet was given).
func (c *checker) pool(f string, p addressPool, external bool) {
	var subnet netip.Prefix
	if p.subnet != "" {
		pre, err := netip.ParsePrefix(p.subnet)
		switch {
		case err != nil || !p.is(pre.Addr()):
			c.add(f+"."+p.subnetKey, "%q is not an %s subnet (%s)", excerpt(p.subnet), p.family, p.example)
		case pre.Masked() != pre:
			c.add(f+"."+p.subnetKey, "%q has host bits set: %s", p.subnet, pre.Masked())
		case external:
			c.add(f+"."+p.subnetKey, "applies to networks hostlet creates, not to an external one")
		default:
			subnet = pre
		}
	}
	if p.subnet == "" && (p.gateway != "" || p.ipRange != "") {
		c.add(f+"."+p.subnetKey, "required with %s and %s", p.gatewayKey, p.rangeKey)
	}
	if p.gateway != "" {
		if a, err := netip.ParseAddr(p.gateway); err != nil || !p.is(a) || subnet.IsValid() && !subnet.Contains(a) {
			c.add(f+"."+p.gatewayKey, "%q is not an %s address in subnet %s", excerpt(p.gateway), p.family, p.subnet)
		}
	}
	if p.ipRange != "" {
		if r, err := netip.ParsePrefix(p.ipRange); err != nil || !p.is(r.Addr()) || r.Masked() != r || subnet.IsValid() && (!subnet.Contains(r.Addr()) || r.Bits() < subnet.Bits()) {
			c.add(f+"."+p.rangeKey, "%q is not an %s range (a CIDR) within subnet %s", excerpt(p.ipRange), p.family, p.subnet)
		}
	}
	if p.addr == "" {
		return
	}
	a, err := netip.ParseAddr(p.addr)
	switch {
	case err != nil || !p.is(a):
		c.add(f+"."+p.addrKey, "%q is not an %s address", excerpt(p.addr), p.family)
	case p.subnet == "" && !external:
		c.add(f+"."+p.addrKey, "needs the network's %s (the engine gives a chosen address only on a network whose subnet was given)", p.subnetKey)
	case subnet.IsValid() && !subnet.Contains(a):
		c.add(f+"."+p.addrKey, "%s is not in subnet %s", a, p.subnet)
	case subnet.IsValid() && (a == subnet.Addr() || p.gateway != "" && sameAddress(a, p.gateway)):
		c.add(f+"."+p.addrKey, "%s is the subnet's own address or its gateway", a)
	}
}

// sameAddress reports whether text is address a, however it is written.
func sameAddress(a netip.Addr, text string) bool {
	b, err := netip.ParseAddr(text)
	return err == nil && a == b
}

// kinds counts the kinds a volume says it is (hostPath, dockerVolume,
// files).
func kinds(v manifest.Volume) int {
	n := 0
	for _, set := range []bool{v.HostPath != "", v.DockerVolume != "", v.Files != nil, v.DataFolder != ""} {
		if set {
			n++
		}
	}
	return n
}

// files checks a files volume: one file with no path, or a folder of
// files at valid, distinct relative paths none of which is the folder of
// another; modes without anything but permission bits; bounded.
func (c *checker) files(f string, v *manifest.Files) {
	switch {
	case len(v.Items) == 0:
		c.add(f+".items", "at least one file is required")
		return
	case len(v.Items) > manifest.MaxFileItems:
		c.add(f+".items", "more than %d files", manifest.MaxFileItems)
		return
	case v.Size() > manifest.MaxFileBytes:
		c.add(f+".items", "the files hold more than %d bytes", manifest.MaxFileBytes)
		return
	}
	if v.Hash != "" {
		c.add(f+".hash", "set by hostlet where it shows a manifest, never an input: give the items' data")
	}
	if len(v.Source) > 4096 || strings.ContainsAny(v.Source, "\x00\n") {
		c.add(f+".source", "not a file name of a source")
	}
	single := len(v.Items) == 1 && v.Items[0].Path == ""
	paths := map[string]bool{}
	for i, it := range v.Items {
		g := fmt.Sprintf("%s.items[%d]", f, i)
		if it.Mode&^0o777 != 0 {
			c.add(g+".mode", "%#o: only permission bits (at most 0777)", it.Mode)
		}
		if single {
			continue
		}
		switch {
		case it.Path == "":
			c.add(g+".path", "required in a folder of files (only a single file has none)")
		case !fs.ValidPath(it.Path) || it.Path == "." || len(it.Path) > 4096:
			c.add(g+".path", "%q: a slash-separated path inside the folder (no .., no leading /)", it.Path)
		case paths[it.Path]:
			c.add(g+".path", "duplicate file %q", it.Path)
		default:
			// Only a valid path is a file of the folder: its folders
			// are checked below.
			paths[it.Path] = true
		}
	}
	for _, p := range sortedKeys(paths) {
		for d := range manifest.ParentDirs(p) {
			if paths[d] {
				c.add(f+".items", "%q is a file and the folder of %q", d, p)
			}
		}
	}
}

var (
	userRE   = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]*(:[a-zA-Z0-9_][a-zA-Z0-9_.-]*)?$`)
	signalRE = regexp.MustCompile(`^(SIG[A-Z0-9+-]+|[1-9][0-9]?)$`)
	groupRE  = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9_.-]*$`)
)

// MaxCPULimit bounds cpuLimit (thousandths of a CPU): 1024 CPUs.
const MaxCPULimit = 1024 * 1000

// processSettings checks a container's user, stop signal, /dev/shm size
// and CPU limit.
// MaxGroupAdd bounds a container's supplementary groups (the kernel's
// NGROUPS_MAX is far above; no image needs more).
const MaxGroupAdd = 64

func (c *checker) processSettings(f string, ct manifest.Container) {
	if ct.User != "" && (len(ct.User) > 256 || !userRE.MatchString(ct.User)) {
		c.add(f+".user", "%q is not user or user:group (names or ids)", ct.User)
	}
	if len(ct.GroupAdd) > MaxGroupAdd {
		c.add(f+".groupAdd", "%d groups are over the limit of %d", len(ct.GroupAdd), MaxGroupAdd)
	}
	for j, g := range ct.GroupAdd {
		if len(g) > 256 || !groupRE.MatchString(g) {
			c.add(fmt.Sprintf("%s.groupAdd[%d]", f, j), "%q is not a group (a name or an id)", g)
		} else if id, err := strconv.ParseUint(g, 10, 64); err == nil && id > math.MaxInt32 {
			c.add(fmt.Sprintf("%s.groupAdd[%d]", f, j), "%s is over the largest group id, %d", g, math.MaxInt32)
		}
	}
	if ct.StopSignal != "" && !signalRE.MatchString(ct.StopSignal) {
		c.add(f+".stopSignal", "%q is not a signal name (SIGTERM, SIGQUIT, ...) or number", ct.StopSignal)
	}
	c.nonNegative(f+".shmSize", ct.ShmSize)
	if ct.PidsLimit < -1 {
		c.add(f+".pidsLimit", "%d is below -1 (-1: unlimited; 0: the engine's default)", ct.PidsLimit)
	}
	c.nonNegative(f+".cpuLimit", ct.CPULimit)
	if ct.CPULimit > MaxCPULimit {
		c.add(f+".cpuLimit", "%d is over the limit of %d (1024 CPUs)", ct.CPULimit, MaxCPULimit)
	}
}

// healthcheck checks a container's Docker healthcheck.
func (c *checker) healthcheck(f string, h *manifest.Healthcheck) {
	if h == nil {
		return
	}
	switch {
	case h.Disable && (len(h.Command) > 0 || h.Shell != ""):
		c.add(f+".disable", "a disabled healthcheck has no command")
	case !h.Disable && len(h.Command) == 0 && h.Shell == "":
		c.add(f, "command or shell is required (or disable)")
	case len(h.Command) > 0 && h.Shell != "":
		c.add(f+".shell", "a healthcheck runs a command or a shell line, not both")
	}
	c.seconds(f+".intervalSeconds", h.IntervalSeconds)
	c.seconds(f+".timeoutSeconds", h.TimeoutSeconds)
	c.seconds(f+".startPeriodSeconds", h.StartPeriodSeconds)
	c.seconds(f+".retries", h.Retries)
}

func (c *checker) container(f string, ct manifest.Container, volumes map[string]*manifest.Files, portNames, containerPorts map[string]string) {
	if ct.Image == "" && ct.Build != nil && c.readError(f+".build") {
		// The build that names the image could not be read.
	} else if ct.Image == "" {
		c.add(f+".image", "required")
	} else if msg := imageRef(ct.Image); msg != "" {
		c.add(f+".image", "%q is not a valid image reference: %s", ct.Image, c.hide.kind(ct.Image, msg))
	}
	c.enum(f+".imagePullPolicy", ct.ImagePullPolicy, pullEnum)
	c.imagePolicy(f+".imagePolicy", ct.ImagePolicy)
	if ct.WorkingDir != "" && !path.IsAbs(ct.WorkingDir) {
		c.add(f+".workingDir", "%q is not an absolute path", ct.WorkingDir)
	}
	if ct.ContainerName != "" {
		c.containerName(f+".containerName", ct.ContainerName)
	}
	c.env(f, ct.Env)
	ownPorts := map[string]bool{} // the container's port names, for its probe
	for j, p := range ct.Ports {
		c.port(fmt.Sprintf("%s.ports[%d]", f, j), p, ownPorts, portNames, containerPorts)
	}
	c.volumeMounts(f, ct.VolumeMounts, volumes)
	c.tmpfs(f, ct.Tmpfs, ct.VolumeMounts, volumes)
	c.healthcheck(f+".healthcheck", ct.Healthcheck)
	c.processSettings(f, ct)
	c.nonNegative(f+".memory", ct.Memory)
	if ct.Memory > 0 && ct.Memory < MinMemory {
		c.add(f+".memory", "%d bytes is below Docker's minimum of %d (6 MiB)", ct.Memory, MinMemory)
	}
	c.nonNegative(f+".cpu", ct.CPU)
	if ct.LivenessProbe != nil {
		c.probe(f+".livenessProbe", ct.LivenessProbe, ownPorts)
	}
	if ct.ReadinessProbe != nil {
		c.probe(f+".readinessProbe", ct.ReadinessProbe, ownPorts)
	}
	if ct.StartupProbe != nil {
		c.probe(f+".startupProbe", ct.StartupProbe, ownPorts)
	}
	if l := ct.Lifecycle; l != nil {
		c.hook(f+".lifecycle.postStart", l.PostStart, ownPorts)
		c.hook(f+".lifecycle.preStop", l.PreStop, ownPorts)
	}
	if ct.RunAsNonRoot && ct.User != "" {
		if why := manifest.RootUser(ct.User); why != "" {
			c.add(f+".user", "runAsNonRoot, but the container %s: give a numeric user other than 0", why)
		}
	}
}

// hook checks a lifecycle hook (nil: none): exec, httpGet (as a probe's)
// or sleepSeconds, one of them.
func (c *checker) hook(f string, h *manifest.Hook, portNames map[string]bool) {
	actions := 0
	if h != nil {
		for _, set := range []bool{h.Exec != nil, h.HTTPGet != nil, h.SleepSeconds != 0} {
			if set {
				actions++
			}
		}
	}
	switch {
	case h == nil:
	case actions > 1:
		c.add(f, "set one of exec, httpGet, sleepSeconds")
	case h.SleepSeconds != 0:
		c.seconds(f+".sleepSeconds", h.SleepSeconds)
	case h.Exec != nil:
		if len(h.Exec.Command) == 0 {
			c.add(f+".exec.command", "required")
		}
	case h.HTTPGet != nil:
		c.probePort(f+".httpGet.port", h.HTTPGet.Port, portNames)
		if h.HTTPGet.Path != "" && !strings.HasPrefix(h.HTTPGet.Path, "/") {
			c.add(f+".httpGet.path", "%q must start with /", h.HTTPGet.Path)
		}
		if h.HTTPGet.Host != "" {
			c.probeHost(f+".httpGet.host", h.HTTPGet.Host)
		}
		c.httpHeaders(f+".httpGet.httpHeaders", h.HTTPGet.HTTPHeaders)
	default:
		c.add(f, "set one of exec, httpGet, sleepSeconds")
	}
}

// env checks the names of container f's environment variables.
func (c *checker) env(f string, env []manifest.EnvVar) {
	seen := map[string]bool{}
	for j, e := range env {
		ef := fmt.Sprintf("%s.env[%d].name", f, j)
		switch {
		case e.Name == "":
			c.add(ef, "required")
		case !envNameRE.MatchString(e.Name):
			c.add(ef, "%q is not a valid environment variable name (letters, digits, _, - and ., not starting with a digit)", e.Name)
		case seen[e.Name]:
			c.add(ef, "duplicate environment variable %q", e.Name)
		}
		seen[e.Name] = true
	}
}

// port checks port pf of a container. Its name goes into ownPorts (the
// container's) and portNames (the pod's, with where each was declared);
// its number and protocol into containerPorts (the pod's, which share one
// network namespace).
func (c *checker) port(pf string, p manifest.Port, ownPorts map[string]bool, portNames, containerPorts map[string]string) {
	if p.Name != "" {
		if msg := serviceName(p.Name); msg != "" {
			c.add(pf+".name", "%q %s", p.Name, msg)
		} else if prev, dup := portNames[p.Name]; dup {
			c.add(pf+".name", "duplicate port name %q (also %s)", p.Name, prev)
		} else {
			portNames[p.Name] = pf
		}
		ownPorts[p.Name] = true
	}
	if p.ContainerPort < 1 || p.ContainerPort > 65535 {
		c.add(pf+".containerPort", "%d is not in 1..65535", p.ContainerPort)
	}
	if p.HostPort < 0 || p.HostPort > 65535 {
		c.add(pf+".hostPort", "%d is not in 1..65535 (or 0 for none)", p.HostPort)
	}
	if p.RandomHostPort && p.HostPort != 0 {
		c.add(pf+".randomHostPort", "and hostPort %d: give one or the other", p.HostPort)
	}
	proto := strings.ToUpper(p.Protocol)
	if proto == "" {
		proto = "TCP"
	}
	if !contains(protocolEnum, proto) {
		c.add(pf+".protocol", "%q is not one of TCP, UDP", p.Protocol)
	}
	if p.HostIP != "" {
		if _, err := netip.ParseAddr(p.HostIP); err != nil {
			c.add(pf+".hostIP", "%q is not an IP address", p.HostIP)
		}
	}
	if p.ContainerPort >= 1 && p.ContainerPort <= 65535 {
		key := fmt.Sprintf("%d/%s", p.ContainerPort, proto)
		if prev, dup := containerPorts[key]; dup {
			c.add(pf+".containerPort", "%s is already declared by %s (containers of a pod share one network namespace)", key, prev)
		} else {
			containerPorts[key] = pf
		}
	}
}

// MaxTmpfs bounds a container's tmpfs mounts.
const MaxTmpfs = 64

// tmpfs checks container f's tmpfs mounts: absolute, clean paths below the
// root, each mounted once and not where a volume is mounted nor inside a
// folder of files (read-only: the engine could not make the mount point);
// a size not negative and permission bits only in the mode.
func (c *checker) tmpfs(f string, ts []manifest.Tmpfs, vms []manifest.VolumeMount, volumes map[string]*manifest.Files) {
	if len(ts) > MaxTmpfs {
		c.add(f+".tmpfs", "%d mounts are over the limit of %d", len(ts), MaxTmpfs)
		return
	}
	taken := map[string]string{}
	for j, vm := range vms {
		taken[path.Clean(vm.MountPath)] = fmt.Sprintf("volumeMounts[%d]", j)
	}
	for j, t := range ts {
		tf := fmt.Sprintf("%s.tmpfs[%d]", f, j)
		p := path.Clean(t.MountPath)
		switch {
		case t.MountPath == "":
			c.add(tf+".mountPath", "required")
		case !path.IsAbs(t.MountPath):
			c.add(tf+".mountPath", "%q is not an absolute path", t.MountPath)
		case p == "/":
			c.add(tf+".mountPath", "%q is the container's root: mount below it", t.MountPath)
		case taken[p] != "":
			c.add(tf+".mountPath", "%q is also mounted by %s", t.MountPath, taken[p])
		case runtimeOwned(p):
			c.add(tf+".mountPath", "%q is the container runtime's own (/proc, /sys, /dev, /etc/hosts, /etc/hostname, /etc/resolv.conf): mount elsewhere", t.MountPath)
		default:
			if in := insideFilesFolder(p, vms, volumes); in != "" {
				c.add(tf+".mountPath", "%q lies in %s, a read-only folder of files: mount it elsewhere", t.MountPath, in)
			}
		}
		if _, dup := taken[p]; !dup {
			taken[p] = fmt.Sprintf("tmpfs[%d]", j)
		}
		c.nonNegative(tf+".sizeBytes", t.SizeBytes)
		if t.Mode > 0o7777 {
			c.add(tf+".mode", "%#o has bits beyond the permission bits (0o7777)", t.Mode)
		}
	}
}

// runtimeOwned reports whether clean path p is, or lies in, what the
// container runtime mounts itself: a tmpfs there would not start.
func runtimeOwned(p string) bool {
	for _, dir := range []string{"/proc", "/sys", "/dev"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return p == "/etc/hosts" || p == "/etc/hostname" || p == "/etc/resolv.conf"
}

// insideFilesFolder is the mount path of the folder of files (a files
// volume of several files) that p lies below, or "".
func insideFilesFolder(p string, vms []manifest.VolumeMount, volumes map[string]*manifest.Files) string {
	for _, vm := range vms {
		files := volumes[vm.Name]
		if files == nil || files.Single() {
			continue
		}
		if at := path.Clean(vm.MountPath); strings.HasPrefix(p, at+"/") {
			return at
		}
	}
	return ""
}

// volumeMounts checks container f's mounts against the pod's volumes.
func (c *checker) volumeMounts(f string, vms []manifest.VolumeMount, volumes map[string]*manifest.Files) {
	mounts := map[string]bool{}
	folders := map[string]*manifest.Files{} // mount path -> files folder
	for j, vm := range vms {
		mf := fmt.Sprintf("%s.volumeMounts[%d]", f, j)
		files, declared := volumes[vm.Name]
		switch {
		case vm.Name == "":
			c.add(mf+".name", "required")
		case !declared:
			c.add(mf+".name", "volume %q is not declared in volumes", vm.Name)
		case files != nil && !vm.ReadOnly:
			c.add(mf+".readOnly", "volume %q holds files of the source, shared and read-only: set readOnly: true", vm.Name)
		}
		switch {
		case vm.MountPath == "":
			c.add(mf+".mountPath", "required")
		case !path.IsAbs(vm.MountPath):
			c.add(mf+".mountPath", "%q is not an absolute path", vm.MountPath)
		case path.Clean(vm.MountPath) == "/":
			c.add(mf+".mountPath", "%q is the container's root: mount below it", vm.MountPath)
		case mounts[path.Clean(vm.MountPath)]:
			c.add(mf+".mountPath", "%q is mounted twice", vm.MountPath)
		}
		mounts[path.Clean(vm.MountPath)] = true
		if files != nil && !files.Single() && path.IsAbs(vm.MountPath) {
			folders[path.Clean(vm.MountPath)] = files
		}
	}
	// A mount inside a files folder needs its mount point there: the
	// engine cannot make one in the read-only copy, and the container
	// would not start.
	// The folders a mount lies in are among its path's own folders: as
	// many lookups as the path has elements, whatever the number of
	// folders.
	for j, vm := range vms {
		p := path.Clean(vm.MountPath)
		if len(folders) == 0 || !path.IsAbs(p) {
			continue
		}
		above := append(slices.Collect(manifest.ParentDirs(p)), "/")
		slices.Sort(above)
		for _, at := range above {
			files, ok := folders[at]
			if !ok {
				continue
			}
			rel, below := strings.CutPrefix(p, strings.TrimSuffix(at, "/")+"/")
			if !below || holds(files, rel) {
				continue
			}
			c.add(fmt.Sprintf("%s.volumeMounts[%d].mountPath", f, j), "%q lies in the read-only folder of files mounted at %s, which holds no %s: the container could not start; mount it elsewhere, or add %s to that folder", vm.MountPath, at, rel, rel)
		}
	}
}

// holds reports whether a files folder holds rel, a file or a folder.
func holds(f *manifest.Files, rel string) bool {
	for _, it := range f.Items {
		if it.Path == rel || strings.HasPrefix(it.Path, rel+"/") {
			return true
		}
	}
	return false
}

func (c *checker) probe(f string, p *manifest.Probe, portNames map[string]bool) {
	switch p.Type {
	case "":
		c.add(f+".type", "required (one of %s)", strings.Join(probeEnum, ", "))
	case manifest.ProbeHTTP:
		if p.HTTPGet == nil {
			c.add(f+".httpGet", "required for type http")
		} else {
			c.probePort(f+".httpGet.port", p.HTTPGet.Port, portNames)
			if p.HTTPGet.Path != "" && !strings.HasPrefix(p.HTTPGet.Path, "/") {
				c.add(f+".httpGet.path", "%q must start with /", p.HTTPGet.Path)
			}
			if p.HTTPGet.Host != "" {
				c.probeHost(f+".httpGet.host", p.HTTPGet.Host)
			}
			c.httpHeaders(f+".httpGet.httpHeaders", p.HTTPGet.HTTPHeaders)
		}
	case manifest.ProbeTCP:
		if p.TCPSocket == nil {
			c.add(f+".tcpSocket", "required for type tcp")
		} else {
			c.probePort(f+".tcpSocket.port", p.TCPSocket.Port, portNames)
		}
	case manifest.ProbeExec:
		if p.Exec == nil || len(p.Exec.Command) == 0 {
			c.add(f+".exec.command", "required for type exec")
		}
	case manifest.ProbeGRPC:
		if p.GRPC == nil {
			c.add(f+".grpc", "required for type grpc")
		} else {
			c.probePort(f+".grpc.port", p.GRPC.Port, portNames)
			if len(p.GRPC.Service) > 253 || strings.ContainsFunc(p.GRPC.Service, unicode.IsControl) {
				c.add(f+".grpc.service", "a service name of at most 253 characters, without control characters")
			}
		}
	default:
		c.add(f+".type", "%q is not one of %s", p.Type, strings.Join(probeEnum, ", "))
	}
	c.seconds(f+".initialDelaySeconds", p.InitialDelaySeconds)
	c.seconds(f+".periodSeconds", p.PeriodSeconds)
	c.seconds(f+".timeoutSeconds", p.TimeoutSeconds)
	c.seconds(f+".failureThreshold", p.FailureThreshold)
}

// httpHeaders checks an httpGet's headers: at most
// manifest.MaxHTTPHeaders, each a valid header name and a value without
// control characters (no header can be smuggled into another).
func (c *checker) httpHeaders(f string, hs []manifest.HTTPHeader) {
	if len(hs) > manifest.MaxHTTPHeaders {
		c.add(f, "%d headers are over the limit of %d", len(hs), manifest.MaxHTTPHeaders)
		return
	}
	for i, h := range hs {
		if !httpguts.ValidHeaderFieldName(h.Name) {
			c.add(fmt.Sprintf("%s[%d].name", f, i), "%q is not a header name", h.Name)
		}
		switch {
		case !httpguts.ValidHeaderFieldValue(h.Value) || len(h.Value) > 4096:
			c.add(fmt.Sprintf("%s[%d].value", f, i), "a header value of at most 4096 bytes, without control characters")
		case strings.EqualFold(h.Name, "Host") && !httpguts.ValidHostHeader(h.Value):
			// Go's client would send another (or none) without a word.
			c.add(fmt.Sprintf("%s[%d].value", f, i), "%q is not a host name (with an optional port)", h.Value)
		}
	}
}

// probeHost accepts an address that can be the pod's own IP. Which one is
// the pod's is known only when it runs (Docker assigns it), so the probe
// checks that and refuses any other; what can never be a pod's address
// (the host's loopback, link-local addresses such as a cloud's metadata
// service, names that DNS may point anywhere) is refused here.
func (c *checker) probeHost(f, host string) {
	const why = "a probe reaches only its pod (leave host empty for the pod's address)"
	ip, err := netip.ParseAddr(host)
	if err != nil {
		c.add(f, "%q is not an IP address: %s", host, why)
		return
	}
	ip = ip.Unmap()
	kind := ""
	switch {
	case ip.IsLoopback():
		kind = "a loopback address"
	case ip.IsUnspecified():
		kind = "the unspecified address"
	case ip.IsLinkLocalUnicast():
		kind = "a link-local address"
	case !ip.IsGlobalUnicast():
		kind = "not a unicast address"
	default:
		return
	}
	c.add(f, "%q is %s, never the pod's own: %s", host, kind, why)
}

// probePort accepts a port number or the name of a port of the container.
func (c *checker) probePort(f, port string, portNames map[string]bool) {
	if port == "" {
		c.add(f, "required")
		return
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			c.add(f, "%d is not in 1..65535", n)
		}
		return
	}
	if msg := serviceName(port); msg != "" {
		c.add(f, "%q is neither a port number nor a port name", port)
	} else if !portNames[port] {
		c.add(f, "%q is not the name of a port of this container", port)
	}
}

func (c *checker) hostPath(f, p string, opts Options) {
	if _, err := HostPath(p, opts); err != nil {
		c.add(f, "%v", err)
	}
}

// HostPath checks a hostPath volume's path against the host's options and
// returns the path to bind-mount: p with every symlink in it resolved, as
// the kernel follows them when Docker mounts it. Validation checks that
// path, and the container create calls HostPath again right before it
// mounts the result, so a link swapped after validation cannot redirect
// the mount.
//
// The allow entries and the Docker sockets are resolved the same way. The
// resolved path must lie under a resolved allow entry, and it must not be
// a Docker socket, nor a folder holding one (mounting /var/run exposes
// /var/run/docker.sock), unless that socket's resolved path is itself
// listed in hostPathAllow.
//
// Only what exists on this machine is resolved: the rest is checked as
// text. So `hostlet validate` in CI, on a machine without the host's
// folders, checks the paths as written, and the host checks them again,
// resolved, when it creates the container.
func HostPath(p string, opts Options) (string, error) {
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	if len(opts.HostPathAllow) == 0 {
		return "", fmt.Errorf("%q is not allowed: this host's hostPathAllow is empty", p)
	}
	resolved, err := resolvePath(p)
	if err != nil {
		return "", fmt.Errorf("%q cannot be resolved: %w", p, err)
	}
	listed := map[string]bool{}
	under := false
	for _, a := range opts.HostPathAllow {
		ra, err := resolvePath(a)
		if err != nil || !path.IsAbs(a) {
			ra = path.Clean(a) // what lies below it cannot be resolved either
		}
		listed[ra] = true
		under = under || within(resolved, ra)
	}
	if !under {
		if resolved == path.Clean(p) {
			return "", fmt.Errorf("%q is not under any of hostPathAllow [%s]", p, strings.Join(opts.HostPathAllow, ", "))
		}
		return "", fmt.Errorf("%q resolves to %q, which is not under any of hostPathAllow [%s]", p, resolved, strings.Join(opts.HostPathAllow, ", "))
	}
	for _, own := range []struct{ dir, what string }{
		{opts.StateDir, "hostlet's stateDir %s (its keys and the files it mounts)"},
		{opts.DataDir, "hostlet's compose.dataDir %s (the pods' data folders)"},
	} {
		if own.dir != "" && !listed[resolvedDir(own.dir)] && (within(resolved, resolvedDir(own.dir)) || within(resolvedDir(own.dir), resolved)) {
			return "", fmt.Errorf("%q is or holds "+own.what+", which hostPathAllow does not list", p, own.dir)
		}
	}
	for _, sock := range dockerSockets(opts.DockerHost) {
		switch {
		case listed[sock]:
		case resolved == sock && resolved == path.Clean(p):
			return "", fmt.Errorf("%q is the Docker socket, which hostPathAllow does not list", p)
		case resolved == sock:
			return "", fmt.Errorf("%q resolves to %q (the Docker socket), which hostPathAllow does not list", p, resolved)
		case within(sock, resolved) && resolved == path.Clean(p):
			return "", fmt.Errorf("%q holds the Docker socket %q, which hostPathAllow does not list", p, sock)
		case within(sock, resolved):
			return "", fmt.Errorf("%q resolves to %q, which holds the Docker socket %q, which hostPathAllow does not list", p, resolved, sock)
		}
	}
	return resolved, nil
}

// resolvedDir is dir made absolute (the config makes it so; a caller may
// not have) with its links resolved, or as it is when it cannot be.
func resolvedDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if r, err := resolvePath(dir); err == nil {
		return r
	}
	return path.Clean(dir)
}

// within reports whether p is dir or lies below it; both are clean.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// dockerSockets returns the resolved paths of the Docker engine's sockets:
// the defaults, and the unix socket of dockerHost when it names one.
func dockerSockets(dockerHost string) []string {
	socks := []string{"/var/run/docker.sock", "/run/docker.sock"}
	if p, ok := strings.CutPrefix(dockerHost, "unix://"); ok && path.IsAbs(p) {
		socks = append(socks, p)
	}
	var out []string
	for _, s := range socks {
		r, err := resolvePath(s)
		if err != nil {
			r = path.Clean(s)
		}
		if !contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// maxLinks bounds the symlinks one path may pass through, as Linux's
// MAXSYMLINKS does.
const maxLinks = 40

// resolvePath returns the path the absolute path p reaches on this machine,
// resolving its components one by one as the kernel does: every symlink
// followed (relative ones from the link's folder), ".." taken after the
// links before it. The first component that does not exist ends the walk:
// it and the rest are appended as text, cleaned, and a ".." there may not
// climb back out. A dangling link counts as its target, so it is checked
// where it would lead once the target appears.
func resolvePath(p string) (string, error) {
	resolved := "/"
	rest := strings.Split(p, "/")
	links := 0
	for len(rest) > 0 {
		comp := rest[0]
		rest = rest[1:]
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			tail := filepath.Clean(filepath.Join(append([]string{comp}, rest...)...))
			if tail == ".." || strings.HasPrefix(tail, "../") {
				return "", fmt.Errorf(`".." climbs out of %q below %q, which does not exist`, resolved, comp)
			}
			return filepath.Join(resolved, tail), nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("more than %d symbolic links", maxLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return resolved, nil
}

func (c *checker) enum(f, v string, allowed []string) {
	if v != "" && !contains(allowed, v) {
		c.add(f, "%q is not one of %s", v, strings.Join(allowed, ", "))
	}
}

// seconds checks a count of seconds (or a probe's failure threshold): not
// negative and at most manifest.MaxSeconds, so that no wait made from it
// wraps around.
func (c *checker) seconds(f string, v int64) {
	c.nonNegative(f, v)
	if v > manifest.MaxSeconds {
		c.add(f, "%d is over the limit of %d", v, manifest.MaxSeconds)
	}
}

// MaxStopGraceSeconds bounds a pod's stop grace (terminationGracePeriodSeconds,
// Compose's stop_grace_period): a stop of a container that ignores SIGTERM
// waits that long inside the sync pass, and the pass waits for every pod,
// so a grace of years froze every other pod's updates. It is the only
// per-pod wait a sync makes inline: probes run on their own goroutines,
// healthchecks in the engine, rollout deadlines are compared, not waited.
const MaxStopGraceSeconds = 600

// stopGrace refuses a stop grace over MaxStopGraceSeconds (one over
// manifest.MaxSeconds is already refused by seconds).
func (c *checker) stopGrace(f string, v int64) {
	if v > MaxStopGraceSeconds && v <= manifest.MaxSeconds {
		c.add(f, "%d is over the limit of %d s: a stop waits that long for it", v, MaxStopGraceSeconds)
	}
}

// MaxNamespaceEntries bounds extraHosts, dns and dnsSearch.
const MaxNamespaceEntries = 64

// namespace checks the pod's hostname, extra hosts and DNS settings.
func (c *checker) namespace(m manifest.Manifest) {
	if m.Hostname != "" {
		if msg := hostnameProblem(m.Hostname); msg != "" {
			c.add("hostname", "%q %s", m.Hostname, msg)
		}
	}
	if m.Domainname != "" {
		if msg := hostnameProblem(m.Domainname); msg != "" {
			c.add("domainname", "%q %s", m.Domainname, msg)
		}
	}
	for _, l := range []struct {
		f    string
		list []string
	}{{"extraHosts", m.ExtraHosts}, {"dns", m.DNS}, {"dnsSearch", m.DNSSearch}} {
		if len(l.list) > MaxNamespaceEntries {
			c.add(l.f, "%d entries are over the limit of %d", len(l.list), MaxNamespaceEntries)
		}
	}
	for i, h := range m.ExtraHosts {
		if msg := extraHost(h); msg != "" {
			c.add(fmt.Sprintf("extraHosts[%d]", i), "%s", msg)
		}
	}
	for i, s := range m.DNS {
		if _, err := netip.ParseAddr(s); err != nil {
			c.add(fmt.Sprintf("dns[%d]", i), "%q is not an IP address", s)
		}
	}
	for i, s := range m.DNSSearch {
		if msg := dnsSubdomain(strings.ToLower(s)); msg != "" {
			c.add(fmt.Sprintf("dnsSearch[%d]", i), "%q %s", s, msg)
		}
	}
}

// MaxHostname is the longest host name the kernel takes (HOST_NAME_MAX).
const MaxHostname = 64

// hostnameProblem says why v is not a host name as the engine sets one,
// or "": dot-separated labels of letters, digits, '-' and '_' (as Docker
// and Compose take them: a service name with '_' is a common hostname),
// none starting or ending with '-', at most MaxHostname characters.
func hostnameProblem(v string) string {
	if len(v) > MaxHostname {
		return fmt.Sprintf("is longer than %d characters", MaxHostname)
	}
	for _, l := range strings.Split(v, ".") {
		if !hostLabelRE.MatchString(l) {
			return "is not a host name (labels of letters, digits, '-' and '_', separated by dots, none starting or ending with '-')"
		}
	}
	return ""
}

// HostGateway is the address of an extraHosts entry that the engine
// replaces by the host's own address on its bridge (Docker 20.10 and
// later, Podman).
const HostGateway = "host-gateway"

// extraHost says why h is not an /etc/hosts line name:ip (or
// name:host-gateway), or "".
func extraHost(h string) string {
	name, ip, ok := strings.Cut(h, ":")
	if !ok || dnsSubdomain(strings.ToLower(name)) != "" {
		return fmt.Sprintf("%q is not name:ip", h)
	}
	if _, err := netip.ParseAddr(ip); err != nil && ip != HostGateway {
		return fmt.Sprintf("%q is not name:ip", h)
	}
	return ""
}

var dependencyEnum = []string{manifest.DependencyStarted, manifest.DependencyHealthy, manifest.DependencyCompleted}

// MaxDependencies bounds a pod's dependsOn.
const MaxDependencies = 64

func (c *checker) dependsOn(id string, deps []manifest.Dependency) {
	if len(deps) > MaxDependencies {
		c.add("dependsOn", "%d dependencies are over the limit of %d", len(deps), MaxDependencies)
		return
	}
	seen := map[string]bool{}
	for i, d := range deps {
		f := fmt.Sprintf("dependsOn[%d]", i)
		switch {
		case d.Pod == "":
			c.add(f+".pod", "required")
		case dnsSubdomain(d.Pod) != "":
			c.add(f+".pod", "%q %s", d.Pod, dnsSubdomain(d.Pod))
		case d.Pod == id:
			c.add(f+".pod", "a pod cannot wait for itself")
		case seen[d.Pod]:
			c.add(f+".pod", "duplicate dependency %q", d.Pod)
		}
		seen[d.Pod] = true
		c.enum(f+".condition", d.Condition, dependencyEnum)
	}
}

// Bounds of a pod's networks.
const (
	MaxNetworks       = 16
	MaxAliases        = 16
	maxDockerNameSize = 253
)

// reservedNetworks are Docker's own networks and network modes.
var reservedNetworks = []string{"bridge", "host", "none", "default"}

func (c *checker) networks(ns []manifest.Network, external []string, policy Policy) {
	if len(ns) > MaxNetworks {
		c.add("networks", "%d networks are over the limit of %d", len(ns), MaxNetworks)
		return
	}
	seen := map[string]bool{}
	for i, n := range ns {
		f := fmt.Sprintf("networks[%d]", i)
		switch {
		case c.dockerName(f+".name", n.Name):
		case contains(reservedNetworks, n.Name):
			c.add(f+".name", "%q is Docker's own; name a network of your own", n.Name)
		case seen[n.Name]:
			c.add(f+".name", "duplicate network %q", n.Name)
		}
		seen[n.Name] = true
		if n.External && n.Internal {
			c.add(f+".internal", "applies to networks hostlet creates, not to an external one")
		}
		if n.External && n.Name != "" && !allowed(external, n.Name) {
			c.add(f+".external", "network %q is not this hostlet's: list it in the host config's policy.externalNetworks to join it", n.Name)
		}
		c.ipam(f, n)
		c.ipv6(f, n)
		c.driverOptions(f, n, policy)
		if len(n.Aliases) > MaxAliases {
			c.add(f+".aliases", "%d aliases are over the limit of %d", len(n.Aliases), MaxAliases)
			continue
		}
		for j, a := range n.Aliases {
			c.dockerName(fmt.Sprintf("%s.aliases[%d]", f, j), a)
		}
	}
}

// containerName checks a name a manifest gives its container: a Docker
// container name, at least two characters as the engine wants, and not
// one of the names hostlet gives (hostlet_...).
func (c *checker) containerName(f, v string) {
	switch {
	case c.dockerName(f, v):
	case len(v) < 2:
		c.add(f, "%q is shorter than the 2 characters of a container name", v)
	case strings.HasPrefix(v, ReservedContainerPrefix):
		c.add(f, "%q starts with %q, which is hostlet's own naming of containers", v, ReservedContainerPrefix)
	}
}

// platformShaped reports whether p is an image platform: os,
// architecture and variant, each 1 to 32 of [a-z0-9_] (the variant may
// have dots too). Written out: as a regular expression its counted
// repetitions compiled to 35 KB.
func platformShaped(p string) bool {
	parts := strings.Split(p, "/")
	if len(parts) > 3 {
		return false
	}
	for i, part := range parts {
		set := "abcdefghijklmnopqrstuvwxyz0123456789_"
		if i == 2 {
			set += "."
		}
		if len(part) < 1 || len(part) > 32 || strings.Trim(part, set) != "" {
			return false
		}
	}
	return true
}

// platform checks a container's image platform: os/arch[/variant], the
// engine's os and architecture (hostlet sets up no emulation).
func (c *checker) platform(f, p, engine string) {
	if !platformShaped(p) {
		c.add(f, "%q is not an image platform (os/arch[/variant]: linux/amd64, linux/arm64/v8)", p)
		return
	}
	osArch := strings.Join(strings.SplitN(p, "/", 3)[:min(2, strings.Count(p, "/")+1)], "/")
	if e := engine; e != "" && osArch != e && !strings.HasPrefix(e, osArch+"/") {
		c.add(f, "%q is not the engine's platform %s (hostlet runs images of the engine's platform)", p, e)
	}
}

// ReservedContainerPrefix starts the names hostlet gives containers
// itself; a manifest's container name may not.
const ReservedContainerPrefix = "hostlet_"

// dockerName checks a network name or alias and reports whether it added
// an error.
func (c *checker) dockerName(f, v string) bool {
	switch {
	case v == "":
		c.add(f, "required")
	case len(v) > maxDockerNameSize:
		c.add(f, "is longer than %d characters", maxDockerNameSize)
	case !dockerNameRE.MatchString(v):
		c.add(f, "%q is not a Docker name (letters, digits, '_', '.' and '-', starting with a letter or digit)", v)
	default:
		return false
	}
	return true
}

func (c *checker) nonNegative(f string, v int64) {
	if v < 0 {
		c.add(f, "%d is negative", v)
	}
}

func (c *checker) dnsLabel(f, v string) {
	switch {
	case v == "":
		c.add(f, "required")
	case len(v) > 63:
		c.add(f, "%q is longer than 63 characters", v)
	case !manifest.IsDNSLabel(v):
		c.add(f, "%q is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", v)
	}
}

// dnsSubdomain returns why v is not an RFC 1123 subdomain, or "".
func dnsSubdomain(v string) string {
	if len(v) > 253 {
		return "is longer than 253 characters"
	}
	for _, part := range strings.Split(v, ".") {
		if len(part) > 63 {
			return "is not an RFC 1123 DNS subdomain (a part between dots is longer than 63 characters)"
		}
		if !manifest.IsDNSLabel(part) {
			return "is not an RFC 1123 DNS subdomain (lowercase letters, digits, '-' and '.')"
		}
	}
	return ""
}

// imageRef returns why image is not a valid Docker image reference, or "".
// A first component with upper case letters parses as a registry host
// ("UPPER/app" would be pulled from the host UPPER); Docker Hub names are
// lower case, so that is reported as the mistake it almost always is. A
// registry host needs a dot or a port, or must be localhost.
func imageRef(image string) string {
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		return strings.TrimPrefix(err.Error(), "invalid reference format: ")
	}
	if first, _, ok := strings.Cut(image, "/"); ok && !strings.ContainsAny(first, ".:") && first != "localhost" && strings.ToLower(first) != first {
		return "repository name must be lowercase"
	}
	return ""
}

// serviceName returns why v is not an RFC 6335 service name, or "".
func serviceName(v string) string {
	switch {
	case len(v) > 15:
		return "is longer than 15 characters"
	case !portNameRE.MatchString(v):
		return "is not a valid port name (lowercase letters, digits and single inner '-')"
	case !hasLetterRE.MatchString(v):
		return "is not a valid port name (needs at least one letter)"
	}
	return ""
}

// allowed reports whether a policy list holds name, or "*".
func allowed(list []string, name string) bool {
	return contains(list, name) || contains(list, "*")
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// imagePolicy checks the policy `hostlet images` reads: a constraint and
// filter that compile, a known pin.
func (c *checker) imagePolicy(f string, p *manifest.ImagePolicy) {
	if p == nil {
		return
	}
	_, err := imagepolicy.Compile(*p)
	for _, e := range imagepolicy.FieldErrors(err) {
		c.add(f+"."+e.Field, "%s", e.Msg)
	}
}
