package podspec

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/validate"
)

// LabelNetworks lists, on the container that holds a pod's network
// namespace, the networks hostlet made for the pod (comma-separated; not
// the external ones): the networks to look at once it is taken down.
const LabelNetworks = "io.hostlet.networks"

// LabelNetworkOf is the ID of the container whose network namespace the
// container of a pod with networkOf joined: when that container is
// replaced, the namespace is gone and the pod's container is recreated.
const LabelNetworkOf = "io.hostlet.network-of"

// LabelFiles lists the names of the copies of the files volumes a
// container mounts (comma-separated; keyed hashes of their digests, see
// EnvHasher.FilesName): the copies are kept while it exists.
const LabelFiles = "io.hostlet.files"

// LabelPreStop carries the container's preStop hook and its pod's grace
// period (PreStop as JSON, a named port made its number), run before
// hostlet stops it:
// read from the container, so a pod removed, its manifest gone, still
// runs it. Empty: none.
const LabelPreStop = "io.hostlet.prestop"

// LabelSpec carries a summary of the container's spec, env values replaced
// by keyed hashes (EnvHasher), so a plan can say which field changed from
// one list call. Containers made before the hashes were keyed carry
// unkeyed "sha256:…" values: those are never compared (see changeReasons),
// and the label is no part of the spec hash, so nothing is recreated for
// the change of form.
const LabelSpec = "io.hostlet.spec"

// Pod is one desired pod: an accepted manifest, defaults filled in, and
// where it came from.
type Pod struct {
	Manifest manifest.Manifest
	Source   string
	Revision string
	// Hidden are what interpolation put into the manifest, whole values
	// and the parts a parser split off (manifest.Sourced.Hidden and
	// HiddenParts): an engine error about the pod never shows one four
	// bytes or longer. Not part of any spec hash.
	Hidden []string
}

// NewPod returns the desired pod for an accepted manifest.
func NewPod(m manifest.Manifest, source, revision string) Pod {
	return Pod{Manifest: m.WithDefaults(), Source: source, Revision: revision}
}

// NewSourcedPod returns the desired pod for an accepted manifest with
// what interpolation put into it, to be kept out of its engine errors.
func NewSourcedPod(s manifest.Sourced, revision string) Pod {
	p := NewPod(s.Manifest, s.Origin.Source, revision)
	p.Hidden = slices.Concat(s.Hidden, s.HiddenParts)
	return p
}

// NeedsInfra reports whether the pod gets a separate infra container. A pod
// of one container holds its own network namespace and publishes its own
// ports: the infra container only exists so that several containers can
// share one namespace that outlives each of them.
func (p Pod) NeedsInfra() bool { return p.Manifest.HasInfra() }

// VolumeName is the Docker volume backing a pod's empty-dir volume.
func VolumeName(instance, pod, volume string) string {
	return "hostlet_" + pod + "_" + volume + "_" + shortSum(instance, pod, volume)
}

func shortSum(parts ...string) string {
	s := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(s[:])[:10]
}

// BaseLabels are the labels every container and volume of a pod carries.
func BaseLabels(instance string, p Pod, slot, hash string) map[string]string {
	l := make(map[string]string, len(p.Manifest.Labels)+10)
	for k, v := range p.Manifest.Labels {
		l[k] = v
	}
	l[hruntime.LabelManaged] = "true"
	l[hruntime.LabelInstance] = instance
	l[hruntime.LabelPod] = p.Manifest.ID
	l[hruntime.LabelContainer] = slot
	l[hruntime.LabelHash] = hash
	l[hruntime.LabelSource] = p.Source
	l[hruntime.LabelRevision] = p.Revision
	return l
}

// containerLabels are the labels of a container of a pod: BaseLabels, and
// every other label hostlet reads back from a container (LabelNetworks,
// LabelFiles, LabelSpec, LabelPreStop) set, empty until the spec sets it. (The chosen
// name is not among them: the runtime's list drops a name label its
// owner key did not sign, so an image's never shows through.) The engine
// gives a container the labels of its image under those it is created
// with: a label hostlet leaves out would be the image's (a Dockerfile
// author's), and one it sets, even empty, hides the image's. Reading an
// empty label is reading a missing one (no network, no files, no recorded
// spec), so containers an earlier hostlet made without them compare the
// same; no label is part of the spec hash.
func containerLabels(instance string, p Pod, slot, hash string) map[string]string {
	l := BaseLabels(instance, p, slot, hash)
	for _, k := range []string{LabelNetworks, LabelFiles, LabelSpec, LabelPreStop, LabelNetworkOf, hruntime.LabelPodIP} {
		l[k] = ""
	}
	return l
}

// EngineRestartPolicy maps a pod's restart policy onto the engine's (an
// app container's), so crashed containers restart even while hostlet is
// down.
func EngineRestartPolicy(policy string) string {
	switch policy {
	case manifest.RestartNever:
		return hruntime.RestartNo
	case manifest.RestartOnFailure:
		return hruntime.RestartOnFailure
	default:
		return hruntime.RestartAlways
	}
}

// Infra is the spec of a pod's infra container: it holds the network
// namespace and publishes every port of the pod.
func Infra(instance, image string, command []string, p Pod) hruntime.ContainerSpec {
	hash := manifest.InfraHash(p.Manifest)
	var ports []hruntime.Port
	for _, c := range p.Manifest.Containers {
		ports = append(ports, runtimePorts(c.Ports)...)
	}
	return hruntime.ContainerSpec{
		Name:          hruntime.ContainerName(instance, p.Manifest.ID, hruntime.InfraName, hash),
		Image:         image,
		Command:       command,
		Labels:        withNetworksLabel(containerLabels(instance, p, hruntime.InfraName, hash), p.Manifest.Networks),
		Ports:         ports,
		Networks:      Networks(p.Manifest.Networks),
		Hostname:      p.Manifest.Hostname,
		Domainname:    p.Manifest.Domainname,
		ExtraHosts:    p.Manifest.ExtraHosts,
		DNS:           p.Manifest.DNS,
		DNSSearch:     p.Manifest.DNSSearch,
		RestartPolicy: hruntime.RestartAlways,
		StopTimeout:   2 * time.Second,
		NetworkMode:   hostNetworkMode(p.Manifest),
	}
}

// hostNetworkMode is "host" for a pod on the host's network, else "".
func hostNetworkMode(m manifest.Manifest) string {
	if m.HostNetwork {
		return "host"
	}
	return ""
}

// hostAccessSpec sets container c's host access on spec.
func hostAccessSpec(spec *hruntime.ContainerSpec, m manifest.Manifest, c manifest.Container) {
	spec.Privileged, spec.CapAdd, spec.CapDrop, spec.SecurityOpt, spec.Sysctls = c.Privileged, c.CapAdd, c.CapDrop, c.SecurityOpt, c.Sysctls
	for _, d := range c.Devices {
		spec.Devices = append(spec.Devices, hruntime.Device{HostPath: d.HostPath, ContainerPath: cmp.Or(d.ContainerPath, d.HostPath), Permissions: cmp.Or(d.Permissions, "rwm")})
	}
	for _, u := range c.Ulimits {
		spec.Ulimits = append(spec.Ulimits, hruntime.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if c.Logging != nil {
		spec.LogDriver, spec.LogOptions = c.Logging.Driver, c.Logging.Options
	}
	if m.HostPID {
		spec.PidMode = "host"
	}
	if m.HostIPC {
		spec.IpcMode = "host"
	}
}

// App is the spec of app container i. infraID is "" for a pod without
// an infra container; env hashes the env values of the io.hostlet.spec label.
func App(instance string, p Pod, i int, infraID string, env *EnvHasher) hruntime.ContainerSpec {
	m := p.Manifest
	c := m.Containers[i]
	hash := manifest.ContainerHash(m, i)
	labels := containerLabels(instance, p, c.Name, hash)
	labels[LabelSpec] = Summarize(m, i, env).Label()
	labels[LabelPreStop] = preStopLabel(c, m.TerminationGracePeriodSeconds)
	if c.ContainerName != "" {
		// Created under the name hostlet gives it, then renamed (see
		// sync's apply): the runtime signs the chosen name.
		labels[hruntime.LabelName] = c.ContainerName
	}
	spec := hruntime.ContainerSpec{
		Name:          hruntime.ContainerName(instance, m.ID, c.Name, hash),
		Image:         c.Image,
		Command:       c.Command,
		Args:          c.Args,
		WorkingDir:    c.WorkingDir,
		Labels:        labels,
		Memory:        c.Memory,
		CPUShares:     c.CPU,
		RestartPolicy: EngineRestartPolicy(m.RestartPolicy),
		StopTimeout:   manifest.Seconds(m.TerminationGracePeriodSeconds),
		Healthcheck:   healthSpec(c.Healthcheck),
		User:          c.User,
		ReadOnly:      c.ReadOnly,
		Init:          c.Init,
		StopSignal:    c.StopSignal,
		ShmSize:       c.ShmSize,
		TTY:           c.TTY,
		StdinOpen:     c.StdinOpen,
		NanoCPUs:      c.CPULimit * 1_000_000,
		PidsLimit:     c.PidsLimit,
		GroupAdd:      GroupAdd(m, c),
		Runtime:       c.Runtime,
		Platform:      c.Platform,
	}
	for _, t := range c.Tmpfs {
		if spec.Tmpfs == nil {
			spec.Tmpfs = map[string]string{}
		}
		spec.Tmpfs[t.MountPath] = TmpfsOptions(t)
	}
	for _, e := range c.Env {
		spec.Env = append(spec.Env, e.Name+"="+e.Value)
	}
	hostAccessSpec(&spec, m, c)
	if infraID != "" {
		spec.NetworkMode = "container:" + infraID
		if m.NetworkOf != "" {
			labels[LabelNetworkOf] = infraID
		}
	} else {
		spec.NetworkMode = hostNetworkMode(m)
		spec.Ports = runtimePorts(c.Ports)
		spec.Networks = Networks(m.Networks)
		spec.Labels = withNetworksLabel(spec.Labels, m.Networks)
		spec.Hostname, spec.ExtraHosts, spec.DNS, spec.DNSSearch = m.Hostname, m.ExtraHosts, m.DNS, m.DNSSearch
		spec.Domainname = m.Domainname
	}
	var digests []string
	spec.Mounts, digests = appMounts(instance, m, c, env)
	if len(digests) > 0 {
		sort.Strings(digests)
		labels[LabelFiles] = strings.Join(slices.Compact(digests), ",")
	}
	return spec
}

// GroupAdd are container c's supplementary groups: its own, and the
// pod's fsGroup (as Kubernetes gives it to every container of the pod)
// unless c lists it already.
func GroupAdd(m manifest.Manifest, c manifest.Container) []string {
	if m.FSGroup == nil {
		return c.GroupAdd
	}
	g := strconv.FormatInt(*m.FSGroup, 10)
	if slices.Contains(c.GroupAdd, g) {
		return c.GroupAdd
	}
	return append(slices.Clip(c.GroupAdd), g)
}

// appMounts are container c's mounts, one per volume mount in order (the
// sources of files and data folders set once they exist: BindFiles,
// BindDataFolders), and the keyed names of the files it mounts.
func appMounts(instance string, m manifest.Manifest, c manifest.Container, env *EnvHasher) ([]hruntime.Mount, []string) {
	var mounts []hruntime.Mount
	var digests []string
	for _, vm := range c.VolumeMounts {
		v, _ := m.Volume(vm.Name)
		// With an fsGroup, a volume is not filled from the image (as a
		// Kubernetes volume is not): the copy would give it the image
		// folder's owner and mode, undoing the group hostlet gave it.
		mt := hruntime.Mount{Type: hruntime.MountVolume, Source: VolumeName(instance, m.ID, v.Name), Target: vm.MountPath, ReadOnly: vm.ReadOnly, Relabel: vm.SELinuxRelabel,
			NoCopy: m.FSGroup != nil}
		switch {
		case v.HostPath != "":
			mt.Type, mt.Source = hruntime.MountBind, v.HostPath
		case v.DockerVolume != "":
			mt.Source = v.DockerVolume
		case v.DataFolder != "":
			// The folder's path is set by BindDataFolders once it is made.
			mt.Type, mt.Source = hruntime.MountBind, ""
		case v.Files != nil:
			// The copy's path is set by BindFiles once it is written. A
			// copy is shared by every container mounting the same
			// content: relabelled shared, never private.
			mt.Type, mt.Source, mt.ReadOnly = hruntime.MountBind, "", true
			if mt.Relabel == "Z" {
				mt.Relabel = "z"
			}
			digests = append(digests, env.CopyName(m, v.Files))
		}
		mounts = append(mounts, mt)
	}
	return mounts, digests
}

// BindFiles has app container i's files volumes mounted from their
// materialised copies (paths by digest); one without a copy is an error.
func BindFiles(spec *hruntime.ContainerSpec, m manifest.Manifest, i int, copies map[string]string) error {
	// App makes one mount per volume mount, in order.
	for j, vm := range m.Containers[i].VolumeMounts {
		v, _ := m.Volume(vm.Name)
		if v.Files == nil {
			continue
		}
		p, ok := copies[v.Files.Digest()]
		if !ok {
			return fmt.Errorf("volume %s: files %s were not written", v.Name, v.Files.Source)
		}
		spec.Mounts[j].Source = p
	}
	return nil
}

// BindDataFolders has app container i's data folders made (ensure) and
// mounted from their paths on the host.
func BindDataFolders(spec *hruntime.ContainerSpec, m manifest.Manifest, i int, ensure func(rel string) (string, error)) error {
	// App makes one mount per volume mount, in order.
	for j, vm := range m.Containers[i].VolumeMounts {
		v, _ := m.Volume(vm.Name)
		if v.DataFolder == "" {
			continue
		}
		p, err := ensure(v.DataFolder)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		spec.Mounts[j].Source = p
	}
	return nil
}

// CheckHostPaths checks every hostPath volume of the pod against the host's
// options, before anything of the pod is pulled or stopped: a pod whose
// host path is no longer allowed keeps its running version.
func CheckHostPaths(m manifest.Manifest, opts validate.Options) error {
	for _, v := range m.Volumes {
		if v.HostPath == "" {
			continue
		}
		if _, err := validate.HostPath(v.HostPath, opts); err != nil {
			return fmt.Errorf("volume %s: hostPath: %w", v.Name, err)
		}
	}
	return nil
}

// ResolveHostPaths is called right before app container i is created: it
// resolves every host path the spec binds again, checks it against the
// host's options, and has the resolved path mounted, so a link swapped
// after validation cannot redirect the mount. On error nothing is mounted.
// The labels and the hash keep the declared path.
func ResolveHostPaths(spec *hruntime.ContainerSpec, m manifest.Manifest, i int, opts validate.Options) error {
	// App makes one mount per volume mount, in order.
	for j, vm := range m.Containers[i].VolumeMounts {
		v, _ := m.Volume(vm.Name)
		if v.HostPath == "" {
			continue
		}
		resolved, err := validate.HostPath(v.HostPath, opts)
		if err != nil {
			return fmt.Errorf("volume %s: hostPath: %w", v.Name, err)
		}
		if spec.Mounts[j].Type != hruntime.MountBind || spec.Mounts[j].Target != vm.MountPath {
			return fmt.Errorf("volume %s: mount %d of the spec is not its bind mount", v.Name, j)
		}
		spec.Mounts[j].Source = resolved
	}
	return nil
}

// healthSpec is the runtime's form of a container's healthcheck.
func healthSpec(h *manifest.Healthcheck) *hruntime.HealthSpec {
	if h == nil {
		return nil
	}
	return &hruntime.HealthSpec{
		Command: h.Command, Shell: h.Shell, Disable: h.Disable,
		Interval: manifest.Seconds(h.IntervalSeconds), Timeout: manifest.Seconds(h.TimeoutSeconds),
		StartPeriod: manifest.Seconds(h.StartPeriodSeconds), Retries: int(min(h.Retries, manifest.MaxSeconds)),
	}
}

// withNetworksLabel adds the LabelNetworks of the networks hostlet makes.
func withNetworksLabel(labels map[string]string, ns []manifest.Network) map[string]string {
	var own []string
	for _, n := range ns {
		if !n.External {
			own = append(own, n.Name)
		}
	}
	if len(own) > 0 {
		labels[LabelNetworks] = strings.Join(own, ",")
	}
	return labels
}

// Networks are the runtime's specs of the pod's networks.
func Networks(ns []manifest.Network) []hruntime.NetworkSpec {
	var out []hruntime.NetworkSpec
	for _, n := range ns {
		out = append(out, hruntime.NetworkSpec{Name: n.Name, Aliases: n.Aliases, External: n.External, Internal: n.Internal,
			Subnet: n.Subnet, Gateway: n.Gateway, IPRange: n.IPRange, IPv4Address: n.IPv4Address,
			EnableIPv6: n.EnableIPv6, IPv6Subnet: n.IPv6Subnet, IPv6Gateway: n.IPv6Gateway, IPv6IPRange: n.IPv6IPRange, IPv6Address: n.IPv6Address,
			DriverOptions: n.DriverOptions})
	}
	return out
}

func runtimePorts(ports []manifest.Port) []hruntime.Port {
	var out []hruntime.Port
	for _, p := range ports {
		out = append(out, hruntime.Port{ContainerPort: p.ContainerPort, HostPort: p.HostPort, Protocol: strings.ToLower(p.Protocol), HostIP: p.HostIP, Random: p.RandomHostPort})
	}
	return out
}

// Summary is what the io.hostlet.spec label records: enough to say
// which field changed, with env values replaced by keyed hashes.
type Summary struct {
	Image         string            `json:"image"`
	Command       []string          `json:"command,omitempty"`
	Args          []string          `json:"args,omitempty"`
	WorkingDir    string            `json:"workingDir,omitempty"`
	Env           map[string]string `json:"env,omitempty"`
	Ports         []string          `json:"ports,omitempty"`
	Mounts        []string          `json:"mounts,omitempty"`
	Memory        int64             `json:"memory,omitempty"`
	CPU           int64             `json:"cpu,omitempty"`
	RestartPolicy string            `json:"restartPolicy,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	// Networks are the pod's, on the container that holds its network
	// namespace (a pod's only container): name(alias,...), in order.
	Networks []string `json:"networks,omitempty"`
	// Healthcheck is the Docker healthcheck, as JSON.
	Healthcheck string `json:"healthcheck,omitempty"`
	// Process holds user, groupAdd, readOnly, init, stopSignal, shmSize,
	// cpuLimit, pidsLimit and runtime, those that are set.
	Process string `json:"process,omitempty"`
	// Namespace is the pod's hostname, extra hosts and DNS, on a pod's
	// only container.
	Namespace string `json:"namespace,omitempty"`
	// Files are the files of its files volumes by name in the source,
	// each content replaced by a keyed hash as env values are (a folder
	// of more than maxListedFiles files is one entry, "<folder>/*").
	Files map[string]string `json:"files,omitempty"`
	// Build is the container's build, when it has one: each input by
	// name ("context file app/main.go", "dockerfile", "arg VERSION",
	// "target", ...), its value a keyed hash as env values are (a
	// context of more than maxListedFiles files is one entry, "context
	// <path>").
	Build map[string]string `json:"build,omitempty"`
	// Host is the container's access to the host (privileged,
	// capabilities, devices, security options, limits, sysctls, log
	// driver, host namespaces), those that are set; a hash when long.
	Host string `json:"host,omitempty"`
	// Secrets are the encrypted files of the source the container's env
	// values and files come from, by name, each a keyed hash of the
	// plaintexts it gives the container (an env value holding one is
	// hashed above without it): "secret shop/.env changed" when one of
	// them does.
	Secrets map[string]string `json:"secrets,omitempty"`
	// Init are the pod's init containers by name, each a keyed hash of
	// its spec (manifest.InitHash): "init container migrate changed".
	Init map[string]string `json:"init,omitempty"`
}

// maxListedFiles bounds the files of one folder the spec label names.
const maxListedFiles = 32

// Summarize is what the io.hostlet.spec label of app container i of m
// records, env values (and files, build inputs, log options) hashed with env.
func Summarize(m manifest.Manifest, i int, env *EnvHasher) Summary {
	c := m.Containers[i]
	s := Summary{
		Image:         c.Image,
		Command:       c.Command,
		Args:          c.Args,
		WorkingDir:    c.WorkingDir,
		Memory:        c.Memory,
		CPU:           c.CPU,
		RestartPolicy: m.RestartPolicy,
		Labels:        m.Labels,
	}
	secrets := secretTokens{}
	if len(c.Env) > 0 {
		s.Env = map[string]string{}
		for _, e := range c.Env {
			s.Env[e.Name] = env.Hash(e.Name, manifest.MaskSecretTokens(e.Value))
			secrets.add(manifest.SecretTokens(e.Value)...)
		}
	}
	for _, p := range c.Ports {
		s.Ports = append(s.Ports, portString(p))
	}
	sort.Strings(s.Ports)
	for _, vm := range c.VolumeMounts {
		v, _ := m.Volume(vm.Name)
		src := "volume:" + v.Name
		switch {
		case v.HostPath != "":
			src = v.HostPath
		case v.DockerVolume != "":
			src = "docker:" + v.DockerVolume
		case v.Files != nil:
			src = "files:" + v.Files.Source
			s.Files = addFiles(s.Files, v.Files, vm.MountPath, m.Object != nil, env)
			for _, it := range v.Files.Items {
				if it.Sealed != "" {
					secrets.add(manifest.SecretTokens(string(it.Data))...)
				}
			}
		case v.DataFolder != "":
			src = "data:" + v.DataFolder
		}
		mode := "rw"
		if vm.ReadOnly {
			mode = "ro"
		}
		s.Mounts = append(s.Mounts, src+":"+vm.MountPath+":"+mode)
	}
	for _, t := range c.Tmpfs {
		s.Mounts = append(s.Mounts, "tmpfs{"+TmpfsOptions(t)+"}:"+t.MountPath+":rw")
	}
	sort.Strings(s.Mounts)
	if c.Healthcheck != nil {
		b, _ := json.Marshal(c.Healthcheck)
		s.Healthcheck = string(b)
	}
	withGroup := c
	withGroup.GroupAdd = GroupAdd(m, c)
	s.Process = processString(withGroup)
	s.Host = hostString(m, c, env)
	s.Build = buildInputs(c.Build, env)
	if !m.HasInfra() {
		s.Namespace, s.Networks = podNetwork(m)
	}
	s.Secrets = secrets.hashed(env)
	for j, ic := range m.InitContainers {
		if s.Init == nil {
			s.Init = make(map[string]string, len(m.InitContainers))
		}
		s.Init[ic.Name] = env.Hash("init container "+ic.Name, manifest.InitHash(m, j))
	}
	return s
}

// podNetwork is the namespace and networks part of the summary of a pod's
// only container.
func podNetwork(m manifest.Manifest) (namespace string, networks []string) {
	if m.Hostname != "" || m.Domainname != "" || len(m.ExtraHosts)+len(m.DNS)+len(m.DNSSearch) > 0 {
		namespace = fmt.Sprintf("hostname=%s hosts=%v dns=%v search=%v", m.Hostname, m.ExtraHosts, m.DNS, m.DNSSearch)
		if m.Domainname != "" {
			// Only when set: the label of a pod without one is unchanged.
			namespace += " domainname=" + m.Domainname
		}
	}
	for _, n := range m.Networks {
		networks = append(networks, networkString(n))
	}
	return namespace, networks
}

// secretTokens gathers the tokens of a container's secrets by file.
type secretTokens map[string][]string

func (st secretTokens) add(tokens ...string) {
	for _, tok := range tokens {
		if f := manifest.SecretTokenFile(tok); f != "" {
			st[f] = append(st[f], tok)
		}
	}
}

// hashed is each file's tokens, sorted, as one keyed hash; nil for none.
func (st secretTokens) hashed(env *EnvHasher) map[string]string {
	if len(st) == 0 {
		return nil
	}
	out := make(map[string]string, len(st))
	for f, toks := range st {
		out[f] = env.Hash("secret "+f, strings.Join(slices.Sorted(slices.Values(toks)), ","))
	}
	return out
}

// addFiles records the files of f in files (made when nil), by their
// names in the source, contents hashed with env's key; kube: f is a
// volume of a pod translated from Kubernetes objects, whose sealed items
// are keys of a Secret encrypted in place.
func addFiles(files map[string]string, f *manifest.Files, mountPath string, kube bool, env *EnvHasher) map[string]string {
	if files == nil {
		files = map[string]string{}
	}
	put := func(name, value string) {
		if _, taken := files[name]; taken {
			// Another volume's file of the same name: this one is named
			// by where it is mounted too.
			name += " at " + mountPath
		}
		files[name] = env.Hash("file "+name, value)
	}
	if len(f.Items) > maxListedFiles {
		put(f.Source+"/*", f.Digest())
		return files
	}
	for _, it := range f.Items {
		name := f.Source
		switch {
		case objectKeys(f.Source):
			name = f.Source + " key " + it.Path
		case it.Path != "":
			name = path.Join(f.Source, it.Path)
		}
		// A decrypted file's change is its secret's (Summary.Secrets);
		// a key of a Kubernetes Secret encrypted in place is the key's
		// too ("secret db key password changed"): its token is a keyed
		// hash of its plaintext.
		data := string(it.Data)
		if !kube {
			data = manifest.MaskSecretTokens(data)
		}
		put(name, strconv.FormatUint(uint64(it.ItemMode()), 8)+":"+data)
	}
	return files
}

// objectKeys reports whether a files volume's source is a Kubernetes
// ConfigMap or Secret ("configmap web-conf", as hostlet's translation
// names it), whose files are its keys.
func objectKeys(source string) bool {
	kind, name, ok := strings.Cut(source, " ")
	return ok && (kind == "configmap" || kind == "secret") && name != "" && !strings.Contains(name, "/")
}

// fileChanges says which files of old and new (Summary.Files) changed:
// "file conf/app.conf changed", or in Kubernetes' words for a ConfigMap's
// or Secret's key, "configmap web-conf key nginx.conf changed".
func fileChanges(old, new map[string]string) []string {
	r := keyedChanges("file ", old, new)
	for i, s := range r {
		if rest := strings.TrimPrefix(s, "file "); strings.Contains(rest, " key ") && objectKeys(rest[:strings.Index(rest, " key ")]) {
			r[i] = rest
		}
	}
	return r
}

// buildInputs names each input of build b with its keyed hash; nil
// without a build.
func buildInputs(b *manifest.Build, env *EnvHasher) map[string]string {
	if b == nil {
		return nil
	}
	in := map[string]string{}
	put := func(name, value string) { in[name] = env.Hash("build "+name, value) }
	if f := b.Files; f != nil && len(f.Items) > maxListedFiles {
		put("context "+b.Context, f.Digest())
	} else if f != nil {
		for _, it := range f.Items {
			// The content's digest, not a copy of it: a context may be
			// large, and this runs at every plan.
			sum := sha256.Sum256(it.Data)
			put("context file "+it.Path, strconv.FormatUint(uint64(it.Mode), 8)+":"+hex.EncodeToString(sum[:]))
		}
	}
	put("dockerfile", b.Recipe)
	for k, v := range b.Args {
		put("arg "+k, v)
	}
	for name, v := range map[string]string{
		"target": b.Target, "network": b.Network, "labels": fmt.Sprint(b.Labels), "extraHosts": strings.Join(b.ExtraHosts, ","),
	} {
		if v != "" && v != "map[]" {
			put(name, v)
		}
	}
	return in
}

// buildReasons says how a build's inputs changed, by name.
func buildReasons(old, new map[string]string) []string {
	return keyedChanges("", old, new)
}

// keyedChanges says which values of old and new, each a keyed hash by
// name, were added, removed or changed (prefix before each name). A value
// is said to have changed only when both hashes were made with the same
// key (Comparable).
func keyedChanges(prefix string, old, new map[string]string) []string {
	var r []string
	for _, k := range unionKeys(old, new) {
		o, inOld := old[k]
		n, inNew := new[k]
		switch {
		case !inOld:
			r = append(r, prefix+k+" added")
		case !inNew:
			r = append(r, prefix+k+" removed")
		case o != n && Comparable(o, n):
			r = append(r, prefix+k+" changed")
		}
	}
	return r
}

// processString lists the container's process settings that are set.
func processString(c manifest.Container) string {
	var parts []string
	if c.User != "" {
		parts = append(parts, "user="+c.User)
	}
	if len(c.GroupAdd) > 0 {
		parts = append(parts, "groupAdd="+strings.Join(c.GroupAdd, ","))
	}
	if c.ReadOnly {
		parts = append(parts, "readOnly")
	}
	if c.Init {
		parts = append(parts, "init")
	}
	if c.StopSignal != "" {
		parts = append(parts, "stopSignal="+c.StopSignal)
	}
	if c.TTY {
		parts = append(parts, "tty")
	}
	if c.StdinOpen {
		parts = append(parts, "stdinOpen")
	}
	if c.ShmSize != 0 {
		parts = append(parts, "shmSize="+strconv.FormatInt(c.ShmSize, 10))
	}
	if c.CPULimit != 0 {
		parts = append(parts, "cpuLimit="+strconv.FormatInt(c.CPULimit, 10))
	}
	if c.PidsLimit != 0 {
		parts = append(parts, "pidsLimit="+strconv.FormatInt(c.PidsLimit, 10))
	}
	if c.Platform != "" {
		parts = append(parts, "platform="+c.Platform)
	}
	if c.Runtime != "" {
		parts = append(parts, "runtime="+c.Runtime)
	}
	return strings.Join(parts, " ")
}

// maxHostString bounds the host settings the spec label spells out.
const maxHostString = 512

// hostString spells out the container's host access; log options' values
// (a log driver's credentials among them) are keyed hashes, as env
// values are.
func hostString(m manifest.Manifest, c manifest.Container, env *EnvHasher) string {
	var parts []string
	add := func(set bool, s string) {
		if set {
			parts = append(parts, s)
		}
	}
	add(m.HostNetwork, "hostNetwork")
	add(m.HostPID, "hostPID")
	add(m.HostIPC, "hostIPC")
	add(c.Privileged, "privileged")
	add(len(c.CapAdd) > 0, "capAdd="+strings.Join(sortedCopy(c.CapAdd), ","))
	add(len(c.CapDrop) > 0, "capDrop="+strings.Join(sortedCopy(c.CapDrop), ","))
	var devs []string
	for _, d := range c.Devices {
		devs = append(devs, d.HostPath+":"+cmp.Or(d.ContainerPath, d.HostPath)+":"+cmp.Or(d.Permissions, "rwm"))
	}
	add(len(devs) > 0, "devices="+strings.Join(sortedCopy(devs), ","))
	add(len(c.SecurityOpt) > 0, "securityOpt="+strings.Join(sortedCopy(c.SecurityOpt), ","))
	var ulimits []string
	for _, u := range c.Ulimits {
		ulimits = append(ulimits, fmt.Sprintf("%s=%d:%d", u.Name, u.Soft, u.Hard))
	}
	add(len(ulimits) > 0, "ulimits="+strings.Join(sortedCopy(ulimits), ","))
	var sysctls []string
	for _, k := range slices.Sorted(maps.Keys(c.Sysctls)) {
		sysctls = append(sysctls, k+"="+c.Sysctls[k])
	}
	add(len(sysctls) > 0, "sysctls="+strings.Join(sysctls, ","))
	if l := c.Logging; l != nil {
		var opts []string
		for _, k := range slices.Sorted(maps.Keys(l.Options)) {
			opts = append(opts, k+"="+env.Hash("logging "+k, l.Options[k]))
		}
		parts = append(parts, "logging="+l.Driver+"{"+strings.Join(opts, ",")+"}")
	}
	s := strings.Join(parts, " ")
	if len(s) > maxHostString {
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:8])
	}
	return s
}

func sortedCopy(s []string) []string {
	return slices.Sorted(slices.Values(s))
}

func networkString(n manifest.Network) string {
	aliases := append([]string(nil), n.Aliases...)
	sort.Strings(aliases)
	s := n.Name + "(" + strings.Join(aliases, ",") + ")"
	if n.External {
		s += " external"
	}
	if n.Internal {
		s += " internal"
	}
	if n.Subnet != "" {
		s += " subnet=" + n.Subnet
	}
	if n.Gateway != "" {
		s += " gateway=" + n.Gateway
	}
	if n.IPRange != "" {
		s += " ipRange=" + n.IPRange
	}
	if n.IPv4Address != "" {
		s += " ip=" + n.IPv4Address
	}
	if n.EnableIPv6 {
		s += " ipv6"
	}
	for _, kv := range [][2]string{{"ipv6Subnet", n.IPv6Subnet}, {"ipv6Gateway", n.IPv6Gateway}, {"ipv6IPRange", n.IPv6IPRange}, {"ip6", n.IPv6Address}} {
		if kv[1] != "" {
			s += " " + kv[0] + "=" + kv[1]
		}
	}
	for _, k := range slices.Sorted(maps.Keys(n.DriverOptions)) {
		s += " " + k + "=" + n.DriverOptions[k]
	}
	return s
}

func portString(p manifest.Port) string {
	s := strconv.Itoa(p.ContainerPort) + "/" + p.Protocol
	if p.RandomHostPort {
		host := "random"
		if p.HostIP != "" {
			host = p.HostIP + ":" + host
		}
		s = host + "->" + s
	}
	if p.HostPort != 0 {
		host := strconv.Itoa(p.HostPort)
		if p.HostIP != "" {
			host = p.HostIP + ":" + host
		}
		s = host + "->" + s
	}
	return s
}

// Label is the summary as the io.hostlet.spec label records it.
func (s Summary) Label() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ParseSummary reads an io.hostlet.spec label back; false when there is
// none or it is not one.
func ParseSummary(label string) (Summary, bool) {
	var s Summary
	if label == "" || json.Unmarshal([]byte(label), &s) != nil {
		return s, false
	}
	return s, true
}

// changeReasons says, field by field, how old became new. Env values never
// appear: only that a variable was added, removed or changed; a value is
// said to have changed only when both hashes were made with the same key
// (Comparable), never merely because one was recorded by an older
// hostlet, on another host or with a replaced key.
func changeReasons(old, new Summary) []string {
	var r []string
	switch {
	case old.Build != nil && new.Build != nil:
		// The image is named after the build's inputs: they say what
		// changed, or else the image did.
		if br := buildReasons(old.Build, new.Build); len(br) > 0 {
			r = append(r, br...)
		} else if old.Image != new.Image {
			r = append(r, imageChange(old.Image, new.Image))
		}
	case old.Image != new.Image:
		r = append(r, imageChange(old.Image, new.Image))
	}
	if !equalStrings(old.Command, new.Command) {
		r = append(r, "command changed")
	}
	if !equalStrings(old.Args, new.Args) {
		r = append(r, "args changed")
	}
	if old.WorkingDir != new.WorkingDir {
		r = append(r, fmt.Sprintf("workingDir %q -> %q", old.WorkingDir, new.WorkingDir))
	}
	r = append(r, keyedChanges("env ", old.Env, new.Env)...)
	if !equalStrings(old.Ports, new.Ports) {
		r = append(r, fmt.Sprintf("ports [%s] -> [%s]", strings.Join(old.Ports, " "), strings.Join(new.Ports, " ")))
	}
	if old.Healthcheck != new.Healthcheck {
		r = append(r, "healthcheck changed")
	}
	if old.Namespace != new.Namespace {
		r = append(r, fmt.Sprintf("namespace [%s] -> [%s]", old.Namespace, new.Namespace))
	}
	if old.Process != new.Process {
		r = append(r, fmt.Sprintf("settings [%s] -> [%s]", old.Process, new.Process))
	}
	if old.Host != new.Host {
		r = append(r, fmt.Sprintf("host access [%s] -> [%s]", old.Host, new.Host))
	}
	if !equalStrings(old.Networks, new.Networks) {
		r = append(r, fmt.Sprintf("networks [%s] -> [%s]", strings.Join(old.Networks, " "), strings.Join(new.Networks, " ")))
	}
	r = append(r, fileChanges(old.Files, new.Files)...)
	r = append(r, keyedChanges("secret ", old.Secrets, new.Secrets)...)
	r = append(r, keyedChanges("init container ", old.Init, new.Init)...)
	if !equalStrings(old.Mounts, new.Mounts) {
		r = append(r, fmt.Sprintf("mounts [%s] -> [%s]", strings.Join(old.Mounts, " "), strings.Join(new.Mounts, " ")))
	}
	if old.Memory != new.Memory {
		r = append(r, fmt.Sprintf("memory %d -> %d", old.Memory, new.Memory))
	}
	if old.CPU != new.CPU {
		r = append(r, fmt.Sprintf("cpu %d -> %d", old.CPU, new.CPU))
	}
	if old.RestartPolicy != new.RestartPolicy {
		r = append(r, fmt.Sprintf("restartPolicy %s -> %s", old.RestartPolicy, new.RestartPolicy))
	}
	for _, k := range unionKeys(old.Labels, new.Labels) {
		if old.Labels[k] != new.Labels[k] {
			r = append(r, "label "+k+" changed")
		}
	}
	return r
}

// envUncompared reports whether a variable in both summaries has values
// that could not be compared (hashed with different keys).
func envUncompared(old, new Summary) bool {
	for k, o := range old.Env {
		if n, ok := new.Env[k]; ok && o != n && !Comparable(o, n) {
			return true
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func unionKeys(a, b map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// imageChange renders an image change, shortening the new image to its tag
// or digest when the repository stays the same.
func imageChange(old, new string) string {
	oldRepo, _ := splitImage(old)
	newRepo, newRef := splitImage(new)
	if oldRepo == newRepo && newRef != "" {
		return "image " + old + " -> " + newRef
	}
	return "image " + old + " -> " + new
}

// splitImage splits "repo:tag" or "repo@digest"; a port in the registry
// host is not a tag.
func splitImage(ref string) (repo, tagOrDigest string) {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[:i], ref[i+1:]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// Redact returns a copy of m with every env value, log option value and
// file content replaced by its hash.
func Redact(m manifest.Manifest, env *EnvHasher) *manifest.Manifest {
	r := m.Clone()
	redactContainers(r.Containers, env)
	redactContainers(r.InitContainers, env)
	for i, v := range r.Volumes {
		if v.Files == nil {
			continue
		}
		shown := &manifest.Files{Source: v.Files.Source, Secret: v.Files.Secret, Hash: env.Hash("files "+v.Files.Source, v.Files.Digest())}
		for _, it := range v.Files.Items {
			shown.Items = append(shown.Items, manifest.FileItem{Path: it.Path, Mode: it.Mode, Sealed: it.Sealed})
		}
		r.Volumes[i].Files = shown
	}
	// The encrypted files by name: their ciphertext is for the host.
	r.Sealed = nil
	for _, f := range m.Sealed {
		r.Sealed = append(r.Sealed, &manifest.Sealed{File: f.File, Format: f.Format})
	}
	return &r
}

// redactContainers replaces, in place, the env values, log options'
// values and build inputs of cs (a copy) by their hashes.
func redactContainers(cs []manifest.Container, env *EnvHasher) {
	for i := range cs {
		redactHTTPGets(cs[i], env)
		for j, e := range cs[i].Env {
			cs[i].Env[j].Value = env.Hash(e.Name, e.Value)
		}
		if l := cs[i].Logging; l != nil {
			// A log driver's options may hold its credentials.
			for k, v := range l.Options {
				l.Options[k] = env.Hash("logging "+k, v)
			}
		}
		if b := cs[i].Build; b != nil {
			// Args may be credentials; the context and the Dockerfile
			// are shown by a hash of their content.
			for k, v := range b.Args {
				b.Args[k] = env.Hash("build arg "+k, v)
			}
			if b.Files != nil {
				b.Files = &manifest.Files{Source: b.Files.Source, Hash: env.Hash("build context "+b.Files.Source, b.Files.Digest())}
			}
			b.Recipe, b.DockerfileInline = "", ""
		}
	}
}

// redactHTTPGets replaces, in place, the header values of c's probes'
// and hooks' httpGets (an Authorization header's token) by their hashes.
func redactHTTPGets(c manifest.Container, env *EnvHasher) {
	var gets []*manifest.HTTPGet
	for _, pr := range []*manifest.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr != nil {
			gets = append(gets, pr.HTTPGet)
		}
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*manifest.Hook{l.PostStart, l.PreStop} {
			if h != nil {
				gets = append(gets, h.HTTPGet)
			}
		}
	}
	for _, g := range gets {
		if g == nil {
			continue
		}
		for j, h := range g.HTTPHeaders {
			g.HTTPHeaders[j].Value = env.Hash("header "+h.Name, h.Value)
		}
	}
}

// RedactPreStopLabel is LabelPreStop's value with its hook's header
// values replaced by their hashes, as the status shows a manifest's.
func RedactPreStopLabel(label string, env *EnvHasher) string {
	var ps PreStop
	if label == "" || json.Unmarshal([]byte(label), &ps) != nil || ps.Hook.HTTPGet == nil || len(ps.Hook.HTTPGet.HTTPHeaders) == 0 {
		return label
	}
	redactHTTPGets(manifest.Container{Lifecycle: &manifest.Lifecycle{PreStop: &ps.Hook}}, env)
	b, _ := json.Marshal(ps) // a value just decoded always marshals
	return string(b)
}

// RecreateReasons compares the container's recorded spec with the desired
// one, field by field.
func RecreateReasons(cur hruntime.Container, m manifest.Manifest, i int, env *EnvHasher) []string {
	want := Summarize(m, i, env)
	old, ok := ParseSummary(cur.Labels[LabelSpec])
	if !ok {
		// No recorded spec: only the image can be compared.
		old, want = Summary{Image: cur.Image}, Summary{Image: want.Image}
	}
	if r := changeReasons(old, want); len(r) > 0 {
		return r
	}
	r := fmt.Sprintf("spec changed (hash %s -> %s)", manifest.ShortHash(cur.Hash(), 12), manifest.ShortHash(manifest.ContainerHash(m, i), 12))
	if envUncompared(old, want) {
		r += ": env values recorded with another key (or by an older hostlet) cannot be compared"
	}
	return []string{r}
}

// TmpfsOptions are the engine's mount options of a tmpfs mount: its
// size and mode, those that are set, and exec or noexec (the engine adds
// nosuid and nodev).
func TmpfsOptions(t manifest.Tmpfs) string {
	var opts []string
	if t.SizeBytes > 0 {
		opts = append(opts, "size="+strconv.FormatInt(t.SizeBytes, 10))
	}
	if t.Mode != 0 {
		opts = append(opts, "mode="+strconv.FormatUint(uint64(t.Mode), 8))
	}
	if t.Exec {
		opts = append(opts, "exec")
	} else {
		// Docker's default, said for Podman's sake (it mounts exec).
		opts = append(opts, "noexec")
	}
	return strings.Join(opts, ",")
}

// PreStop is what LabelPreStop holds: the hook, and the pod's grace
// period, which bounds it (a pod removed has no manifest to tell it).
type PreStop struct {
	Hook         manifest.Hook `json:"hook"`
	GraceSeconds int64         `json:"graceSeconds"`
}

// preStopLabel is LabelPreStop's value for container c of a pod of grace
// period grace: its preStop hook, an httpGet's named port made its
// number; "" without one.
func preStopLabel(c manifest.Container, grace int64) string {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return ""
	}
	h := *c.Lifecycle.PreStop
	if g := h.HTTPGet; g != nil {
		resolved := *g
		for _, p := range c.Ports {
			if p.Name != "" && p.Name == g.Port {
				resolved.Port = strconv.Itoa(p.ContainerPort)
			}
		}
		h.HTTPGet = &resolved
	}
	b, err := json.Marshal(PreStop{Hook: h, GraceSeconds: grace})
	if err != nil {
		return ""
	}
	return string(b)
}
