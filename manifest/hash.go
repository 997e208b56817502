package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/netip"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/distribution/reference"
)

// HashVersion prefixes every spec hash. A future hash version must compare
// fields when it meets a container labelled with an older version, so that
// upgrading hostlet never restarts a container.
const HashVersion = "v1"

// hashedContainer is the explicit list of what needs a new container. Its
// field order and JSON names are frozen: golden values in testdata pin them.
// Probes, pull policy and the grace period are deliberately absent.
type hashedContainer struct {
	Image   string   `json:"image"`
	Command []string `json:"command"`
	// Args is left out when empty, so every hash made before it existed
	// stays the same.
	Args          []string          `json:"args,omitempty"`
	WorkingDir    string            `json:"workingDir"`
	Env           []EnvVar          `json:"env"`
	Ports         []hashedPort      `json:"ports"`
	Mounts        []hashedMount     `json:"mounts"`
	Memory        int64             `json:"memory"`
	CPU           int64             `json:"cpu"`
	RestartPolicy string            `json:"restartPolicy"`
	Labels        map[string]string `json:"labels"`
	// Networks are the pod's, in the hash of the container that holds the
	// pod's network namespace (the only container of a pod without an
	// infra container); left out when there are none.
	Networks []Network `json:"networks,omitempty"`
	// Namespace is the pod's hostname, hosts and DNS, on the same
	// container; left out when unset.
	Namespace *hashedNamespace `json:"namespace,omitempty"`
	// Healthcheck is left out when unset, as Args is; so are the
	// settings below.
	Healthcheck *Healthcheck `json:"healthcheck,omitempty"`
	User        string       `json:"user,omitempty"`
	GroupAdd    []string     `json:"groupAdd,omitempty"`
	ReadOnly    bool         `json:"readOnly,omitempty"`
	Init        bool         `json:"init,omitempty"`
	StopSignal  string       `json:"stopSignal,omitempty"`
	ShmSize     int64        `json:"shmSize,omitempty"`
	TTY         bool         `json:"tty,omitempty"`
	StdinOpen   bool         `json:"stdinOpen,omitempty"`
	PidsLimit   int64        `json:"pidsLimit,omitempty"`
	Runtime     string       `json:"runtime,omitempty"`
	Platform    string       `json:"platform,omitempty"`
	Tmpfs       []Tmpfs      `json:"tmpfs,omitempty"`
	CPULimit    int64        `json:"cpuLimit,omitempty"`
	// The host's access, each left out when unset; lists in a sorted
	// order where their order means nothing.
	Privileged  bool              `json:"privileged,omitempty"`
	CapAdd      []string          `json:"capAdd,omitempty"`
	CapDrop     []string          `json:"capDrop,omitempty"`
	Devices     []Device          `json:"devices,omitempty"`
	SecurityOpt []string          `json:"securityOpt,omitempty"`
	Ulimits     []Ulimit          `json:"ulimits,omitempty"`
	Sysctls     map[string]string `json:"sysctls,omitempty"`
	Logging     *Logging          `json:"logging,omitempty"`
	HostPID     bool              `json:"hostPID,omitempty"`
	HostIPC     bool              `json:"hostIPC,omitempty"`
	// InitContainers are the pod's init containers, "name=hash" in
	// order: a changed one runs them all again before every app
	// container is created anew. Left out when there are none.
	InitContainers []string `json:"initContainers,omitempty"`
	// FSGroup is the pod's fsGroup, a supplementary group of every
	// container; left out when unset, so every hash made before it
	// existed stays the same.
	FSGroup *int64 `json:"fsGroup,omitempty"`
}

type hashedMount struct {
	Volume    string `json:"volume"`
	HostPath  string `json:"hostPath"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly"`
	// DockerVolume and External are left out when unset, so every hash
	// made before they existed stays the same.
	DockerVolume string `json:"dockerVolume,omitempty"`
	External     bool   `json:"external,omitempty"`
	// Files is the digest of a files volume's content (left out for
	// other volumes): a changed file needs a new container.
	Files string `json:"files,omitempty"`
	// DataFolder is a data folder's path (left out for other volumes).
	DataFolder string `json:"dataFolder,omitempty"`
	// SELinuxRelabel is left out when unset.
	SELinuxRelabel string `json:"selinuxRelabel,omitempty"`
}

// hashedInfra is what needs a new infra container: the pod's published
// ports and its labels. The infra image is not part of it, so a new hostlet
// with a new pause image never restarts a pod.
type hashedInfra struct {
	Ports     []hashedPort      `json:"ports"`
	Labels    map[string]string `json:"labels"`
	Networks  []Network         `json:"networks,omitempty"`
	Namespace *hashedNamespace  `json:"namespace,omitempty"`
}

// hashedNamespace is a pod's hostname, extra hosts, DNS servers and
// search domains, as declared (their order matters to the resolver).
type hashedNamespace struct {
	// HostNetwork: the host's network namespace instead of one of the
	// pod's.
	HostNetwork bool     `json:"hostNetwork,omitempty"`
	Hostname    string   `json:"hostname,omitempty"`
	Domainname  string   `json:"domainname,omitempty"`
	ExtraHosts  []string `json:"extraHosts,omitempty"`
	DNS         []string `json:"dns,omitempty"`
	DNSSearch   []string `json:"dnsSearch,omitempty"`
	// NetworkOf: the namespace of another pod's container.
	NetworkOf string `json:"networkOf,omitempty"`
}

// namespaceOf is m's hashedNamespace, nil when it sets none.
func namespaceOf(m Manifest) *hashedNamespace {
	if !m.HostNetwork && m.Hostname == "" && m.Domainname == "" && len(m.ExtraHosts) == 0 && len(m.DNS) == 0 && len(m.DNSSearch) == 0 && m.NetworkOf == "" {
		return nil
	}
	return &hashedNamespace{HostNetwork: m.HostNetwork, Hostname: m.Hostname, Domainname: m.Domainname, ExtraHosts: m.ExtraHosts, DNS: m.DNS, DNSSearch: m.DNSSearch, NetworkOf: m.NetworkOf}
}

// hashedPort leaves out the port's name: renaming a port needs no new
// container.
type hashedPort struct {
	ContainerPort int    `json:"containerPort"`
	HostPort      int    `json:"hostPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP"`
	// RandomHostPort is left out when unset.
	RandomHostPort bool `json:"randomHostPort,omitempty"`
}

// ContainerHash returns the versioned spec hash of container i of m, after
// defaults are filled in, e.g. "v1:3f2a…". It is stable across key order,
// formatting, env, port and mount order, and defaults written out or left
// implicit (the image's docker.io/library/ and :latest, a path's trailing
// slash, an IP address's spelling included).
func ContainerHash(m Manifest, i int) string {
	d := m.WithDefaults()
	c := d.Containers[i]
	h := hashedContainer{
		Image:         normalImage(c.Image),
		Command:       nonNil(c.Command),
		Args:          c.Args,
		WorkingDir:    cleanPath(c.WorkingDir),
		Env:           sortedEnv(c.Env),
		Ports:         sortedPorts(c.Ports),
		Mounts:        []hashedMount{},
		Memory:        c.Memory,
		CPU:           c.CPU,
		RestartPolicy: d.RestartPolicy,
		Labels:        nonNilMap(d.Labels),
	}
	if !d.HasInfra() {
		h.Networks = hashedNetworks(d.Networks)
		h.Namespace = namespaceOf(d)
	}
	h.InitContainers = initHashes(d)
	h.FSGroup = d.FSGroup
	h.Healthcheck = c.Healthcheck
	h.User, h.ReadOnly, h.Init, h.StopSignal, h.ShmSize, h.CPULimit = c.User, c.ReadOnly, c.Init, c.StopSignal, c.ShmSize, c.CPULimit
	h.TTY, h.StdinOpen = c.TTY, c.StdinOpen
	h.PidsLimit, h.GroupAdd, h.Runtime, h.Platform = c.PidsLimit, c.GroupAdd, c.Runtime, c.Platform
	if len(c.Tmpfs) > 0 {
		h.Tmpfs = slices.SortedFunc(slices.Values(c.Tmpfs), func(a, b Tmpfs) int { return strings.Compare(a.MountPath, b.MountPath) })
	}
	h.Privileged, h.Sysctls, h.Logging, h.HostPID, h.HostIPC = c.Privileged, c.Sysctls, c.Logging, d.HostPID, d.HostIPC
	// Security options in order: the engine takes the last of a key.
	h.CapAdd, h.CapDrop, h.SecurityOpt = sortedStrings(c.CapAdd), sortedStrings(c.CapDrop), c.SecurityOpt
	if len(c.Devices) > 0 {
		h.Devices = slices.SortedFunc(slices.Values(c.Devices), func(a, b Device) int { return strings.Compare(a.ContainerPath, b.ContainerPath) })
	}
	if len(c.Ulimits) > 0 {
		h.Ulimits = slices.SortedFunc(slices.Values(c.Ulimits), func(a, b Ulimit) int { return strings.Compare(a.Name, b.Name) })
	}
	for _, vm := range c.VolumeMounts {
		v, _ := d.Volume(vm.Name)
		hm := hashedMount{Volume: vm.Name, HostPath: cleanPath(v.HostPath), MountPath: cleanPath(vm.MountPath), ReadOnly: vm.ReadOnly, DockerVolume: v.DockerVolume, External: v.External, DataFolder: v.DataFolder, SELinuxRelabel: vm.SELinuxRelabel}
		if v.Files != nil {
			hm.Files = v.Files.Digest()
		}
		h.Mounts = append(h.Mounts, hm)
	}
	sort.Slice(h.Mounts, func(a, b int) bool { return h.Mounts[a].MountPath < h.Mounts[b].MountPath })
	return sum(h)
}

// InfraHash returns the versioned hash of the pod's infra container.
func InfraHash(m Manifest) string {
	d := m.WithDefaults()
	var ports []Port
	for _, c := range d.Containers {
		ports = append(ports, c.Ports...)
	}
	return sum(hashedInfra{Ports: sortedPorts(ports), Labels: nonNilMap(d.Labels), Networks: hashedNetworks(d.Networks), Namespace: namespaceOf(d)})
}

// PodHash returns the versioned hash of the whole pod: each container's
// name and ContainerHash, and the infra container's hash for a pod that
// has one. Two versions of a pod hash the same exactly when no container
// of it would be created anew; a rollout marks versions by it.
func PodHash(m Manifest) string {
	type slot struct{ Name, Hash string }
	h := struct {
		Containers []slot
		Infra      string `json:",omitempty"`
	}{}
	for i, c := range m.Containers {
		h.Containers = append(h.Containers, slot{c.Name, ContainerHash(m, i)})
	}
	if m.HasInfra() {
		h.Infra = InfraHash(m)
	}
	return sum(h)
}

// HasInfra reports whether the pod has an infra container holding its
// network namespace: it has several containers, or init containers
// (which share the namespace with the app containers), or a container
// reads the pod's address (known before the container is created only
// when the infra container holds it) in a namespace of its own.
func (m Manifest) HasInfra() bool {
	return len(m.Containers) > 1 || len(m.InitContainers) > 0 || m.readsOwnPodIP()
}

// readsOwnPodIP reports whether a container of the pod reads the pod's
// address (FieldPodIP) from a network namespace of the pod's own.
func (m Manifest) readsOwnPodIP() bool {
	if m.HostNetwork || m.NetworkOf != "" {
		return false
	}
	reads := func(c Container) bool { return ReadsField(c, FieldPodIP) }
	return slices.ContainsFunc(m.Containers, reads) || slices.ContainsFunc(m.InitContainers, reads)
}

// initHashes are d's init containers as "name=hash" in order (InitHash),
// nil for none. d has its defaults written out.
func initHashes(d Manifest) []string {
	if len(d.InitContainers) == 0 {
		return nil
	}
	out := make([]string, len(d.InitContainers))
	for j, c := range d.InitContainers {
		out[j] = c.Name + "=" + InitHash(d, j)
	}
	return out
}

// InitHash is the spec hash of init container j of m: its ContainerHash
// as if it were the pod's only app container (in the infra container's
// network namespace).
func InitHash(m Manifest, j int) string {
	init := m
	init.Containers = []Container{m.InitContainers[j]}
	// Without init containers of its own (no recursion), and without the
	// pod's network settings: they are the infra container's.
	init.InitContainers = nil
	init.Networks, init.Hostname, init.Domainname, init.ExtraHosts, init.DNS, init.DNSSearch = nil, "", "", nil, nil, nil
	return ContainerHash(init, 0)
}

// hashedNetworks are the pod's networks as hashed: in order (the first is
// joined at creation), aliases sorted; nil for none.
func hashedNetworks(ns []Network) []Network {
	if len(ns) == 0 {
		return nil
	}
	out := make([]Network, len(ns))
	for i, n := range ns {
		n.Aliases = append([]string(nil), n.Aliases...)
		sort.Strings(n.Aliases)
		out[i] = n
	}
	return out
}

func sum(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("manifest: hash input does not marshal: " + err.Error())
	}
	s := sha256.Sum256(b)
	return HashVersion + ":" + hex.EncodeToString(s[:])
}

func sortedEnv(env []EnvVar) []EnvVar {
	out := append([]EnvVar{}, env...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

func sortedPorts(ports []Port) []hashedPort {
	out := make([]hashedPort, len(ports))
	for i, p := range ports {
		out[i] = hashedPort{ContainerPort: p.ContainerPort, HostPort: p.HostPort, Protocol: p.Protocol, HostIP: normalIP(p.HostIP), RandomHostPort: p.RandomHostPort}
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.ContainerPort != y.ContainerPort {
			return x.ContainerPort < y.ContainerPort
		}
		if x.Protocol != y.Protocol {
			return x.Protocol < y.Protocol
		}
		if x.HostPort != y.HostPort {
			return x.HostPort < y.HostPort
		}
		return x.HostIP < y.HostIP
	})
	return out
}

// normalImage writes an image reference out in full, so that nginx,
// nginx:latest and docker.io/library/nginx:latest hash the same. An invalid
// reference (rejected by validation) is kept as it is.
func normalImage(image string) string {
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return image
	}
	return reference.TagNameOnly(ref).String()
}

// normalIP writes an IP address in its canonical form (0:0::1 is ::1).
func normalIP(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return a.String()
	}
	return ip
}

// cleanPath drops redundant slashes and dots from an absolute path
// (/data/ is /data).
func cleanPath(p string) string {
	if !path.IsAbs(p) {
		return p
	}
	return path.Clean(p)
}

// sortedStrings is a sorted copy of s, nil when s is empty.
func sortedStrings(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(s))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// ShortHash returns n hex digits of a versioned hash, for names.
func ShortHash(h string, n int) string {
	_, hex, _ := strings.Cut(h, ":")
	if len(hex) > n {
		return hex[:n]
	}
	return hex
}
