package manifest

import "strings"

// Version is the only manifest version hostlet understands.
const Version = "v1beta1"

// Restart policies.
const (
	RestartAlways    = "Always"
	RestartOnFailure = "OnFailure"
	RestartNever     = "Never"
)

// Image pull policies.
const (
	PullAlways       = "Always"
	PullIfNotPresent = "IfNotPresent"
	PullNever        = "Never"
)

// Probe types.
const (
	ProbeHTTP = "http"
	ProbeTCP  = "tcp"
	ProbeExec = "exec"
	ProbeGRPC = "grpc"
)

// Probe defaults, applied when the field is 0.
const (
	DefaultProbePeriodSeconds    = 10
	DefaultProbeTimeoutSeconds   = 1
	DefaultProbeFailureThreshold = 3
	DefaultGracePeriodSeconds    = 10
)

// Rollback policies: what hostlet does when a changed pod does not become
// ready (see Manifest.Rollback).
const (
	// RollbackAuto restores the last version that was ready and holds the
	// new one back until the manifest changes again.
	RollbackAuto = "Auto"
	// RollbackNever leaves the new version as it is, failing.
	RollbackNever = "Never"
	// RollbackHold leaves the new version as it is and holds the pod, as
	// `hostlet hold` does (Compose's failure_action: pause).
	RollbackHold = "Hold"
)

// fsGroup change policies (see Manifest.FSGroupChangePolicy), named as
// Kubernetes names them.
const (
	FSGroupChangeAlways         = "Always"
	FSGroupChangeOnRootMismatch = "OnRootMismatch"
)

// MaxFSGroup is the largest fsGroup, as Kubernetes bounds it.
const MaxFSGroup = 2147483647

// Rollout defaults, applied when the field is 0.
const (
	DefaultMinReadySeconds         = 10
	DefaultProgressDeadlineSeconds = 300
)

// Manifest is one pod: a group of containers sharing one network namespace.
type Manifest struct {
	// Version is required and must be "v1beta1".
	Version string `json:"version"`
	// ID is required: an RFC 1123 DNS subdomain, unique on the host.
	ID string `json:"id"`
	// RestartPolicy is Always (default), OnFailure or Never.
	RestartPolicy string `json:"restartPolicy,omitempty"`
	// TerminationGracePeriodSeconds is the stop timeout before SIGKILL.
	TerminationGracePeriodSeconds int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// Labels are copied onto every container of the pod.
	Labels map[string]string `json:"labels,omitempty"`
	// Volumes the containers may mount.
	Volumes []Volume `json:"volumes,omitempty"`
	// Networks the pod joins, the first one at creation; none: Docker's
	// default bridge. Containers of other pods on a network reach the pod
	// by its aliases.
	Networks []Network `json:"networks,omitempty"`
	// Containers: at least one.
	Containers []Container `json:"containers"`
	// InitContainers run one after another, each to completion, in the
	// pod's network namespace and with its volumes, before the app
	// containers an apply creates start: once per version of the pod
	// (a change of any container, or a new infra container, runs them
	// again; a restart does not). One that exits non-zero fails the pod
	// with its exit code, and is run again after the pod's backoff. They
	// have no ports, probes, lifecycle hooks, build or container name.
	// Their specs are part of every app container's hash.
	InitContainers []Container `json:"initContainers,omitempty"`
	// Hostname (a name or a fully qualified one, at most 64 characters),
	// Domainname (the NIS domain name), ExtraHosts ("name:ip" lines of
	// /etc/hosts; ip may be host-gateway, the host's address on the
	// engine's bridge), DNS (name server addresses) and DNSSearch (search
	// domains) set up the pod's network namespace: on the container that
	// holds it.
	Hostname   string   `json:"hostname,omitempty"`
	Domainname string   `json:"domainname,omitempty"`
	ExtraHosts []string `json:"extraHosts,omitempty"`
	DNS        []string `json:"dns,omitempty"`
	DNSSearch  []string `json:"dnsSearch,omitempty"`
	// DependsOn are pods this one waits for before any of its containers
	// is created or recreated: it stays Pending, saying which, until each
	// is in its condition. Not part of any container's hash.
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	// HostNetwork runs the pod in the host's network namespace (no
	// networks, ports are the host's own: hostPort is containerPort);
	// HostPID and HostIPC put its containers in the host's PID and IPC
	// namespaces. All three need the host config's policy.hostNetwork.
	HostNetwork bool `json:"hostNetwork,omitempty"`
	HostPID     bool `json:"hostPID,omitempty"`
	HostIPC     bool `json:"hostIPC,omitempty"`
	// NetworkOf is the id of another pod of the same source whose network
	// namespace this pod's one container joins (Compose's network_mode:
	// service:). It has no network, ports, hostname or DNS settings of
	// its own, waits for that pod to be started as a dependency does,
	// and is recreated whenever the container holding that namespace is.
	NetworkOf string `json:"networkOf,omitempty"`

	// NodeSelector are host labels (the host config's labels:) a host
	// must have, each key with its value, to run the pod: on a host
	// without them the pod is not run (and one running is removed), and
	// `hostlet diff` says why. Besides its own labels every host has
	// kubernetes.io/hostname, kubernetes.io/os and kubernetes.io/arch.
	// No part of any hash.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// MinReadySeconds is how long a changed pod must be ready without a
	// break for its update to count as done (0: 10). ProgressDeadlineSeconds
	// bounds how long a changed pod may take to get there (0: 300).
	// Rollback says what happens when it does not, or fails first: Auto
	// (default), Never or Hold. None of them is part of any hash.
	MinReadySeconds         int64  `json:"minReadySeconds,omitempty"`
	ProgressDeadlineSeconds int64  `json:"progressDeadlineSeconds,omitempty"`
	Rollback                string `json:"rollback,omitempty"`

	// FSGroup is a group id (0..2147483647) every container of the pod,
	// init containers too, gets as a supplementary group, and that owns
	// the pod's volumes hostlet keeps on the host: its empty dirs, data
	// folders and named Docker volumes (local driver) are made
	// group-owned by it, group read/write, folders setgid so that files
	// made later inherit the group, before containers mounting them are
	// created; its files volumes are written group-owned by it, group
	// readable. Host paths are never changed. Nil: none. Part of every
	// container's hash (a change recreates the pod).
	FSGroup *int64 `json:"fsGroup,omitempty"`
	// FSGroupChangePolicy says when the volumes' ownership is changed:
	// Always (default) walks every volume each time containers of the
	// pod are created; OnRootMismatch only when a volume's root is not
	// yet group-owned by FSGroup with those bits. Needs FSGroup; no part
	// of any hash.
	FSGroupChangePolicy string `json:"fsGroupChangePolicy,omitempty"`

	// Object is the Kubernetes object the pod was translated from, nil
	// for others. Set by hostlet's translation only; no part of any hash.
	Object *ObjectRef `json:"object,omitempty"`

	// Sealed are the SOPS-encrypted files of the source the manifest's
	// encrypted values come from: env values that are or hold
	// ENC[AES256_GCM,...] (or, on the host, tokens standing for them, see
	// SecretTokenPrefix) and files items marked Sealed. Set by hostlet's
	// readers only; no part of any hash.
	Sealed []*Sealed `json:"sealed,omitempty"`
}

// ObjectRef names the Kubernetes object a pod was translated from, as the
// status shows it: its kind, namespace and name (a Deployment's, for each
// of its replicas) and its pod template's annotations.
type ObjectRef struct {
	Kind        string            `json:"kind"`
	Namespace   string            `json:"namespace,omitempty"`
	Name        string            `json:"name"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Dependency conditions.
const (
	// DependencyStarted: every container of the pod runs.
	DependencyStarted = "Started"
	// DependencyHealthy: every container runs and none has a Docker
	// healthcheck that is starting or unhealthy.
	DependencyHealthy = "Healthy"
	// DependencyCompleted: every container has exited with code 0.
	DependencyCompleted = "Completed"
)

// Dependency is a pod another pod waits for, in a condition (Started
// when empty).
type Dependency struct {
	Pod       string `json:"pod"`
	Condition string `json:"condition,omitempty"`
}

// Volume is a named volume of a pod: a host path, a Docker volume of its
// own name, files of the source (Files), or, with none of them, an empty
// directory owned by the pod (removed with it).
type Volume struct {
	Name     string `json:"name"`
	HostPath string `json:"hostPath,omitempty"`
	// DockerVolume is a named Docker volume that outlives the pod: hostlet
	// creates it (labelled as its own) on first use and never removes it
	// implicitly (`hostlet volumes rm`); several pods may mount it.
	DockerVolume string `json:"dockerVolume,omitempty"`
	// External: DockerVolume is made outside hostlet and must exist.
	External bool `json:"external,omitempty"`
	// Files are files of the source that hostlet writes under its
	// stateDir and bind-mounts read-only (see Files).
	Files *Files `json:"files,omitempty"`
	// DataFolder is a folder the pod writes, kept on the host under the
	// host config's compose.dataDir, in the instance's folder, at this
	// relative path ("<project>/<path>" for a Compose project's relative
	// bind that the project does not hold): made on first use, kept
	// across recreates, revisions and the pod's removal, removed only by
	// `hostlet volumes rm`.
	DataFolder string `json:"dataFolder,omitempty"`
}

// Network is a user-defined Docker network a pod joins.
type Network struct {
	// Name is the Docker network's name.
	Name string `json:"name"`
	// Aliases are the pod's names on the network (DNS labels).
	Aliases []string `json:"aliases,omitempty"`
	// External: the network is made outside hostlet; hostlet needs it to
	// exist and never creates or removes it. Otherwise hostlet creates it
	// (a bridge, labelled as its own) on first use and removes it once no
	// pod of it is left.
	External bool `json:"external,omitempty"`
	// Internal: a network hostlet creates without outside connectivity.
	Internal bool `json:"internal,omitempty"`
	// Subnet (an IPv4 CIDR), and within it Gateway and IPRange (where
	// the engine picks addresses), are the IPAM settings of a network
	// hostlet creates; every pod declaring the network declares them
	// alike. Unset: the engine picks.
	Subnet  string `json:"subnet,omitempty"`
	Gateway string `json:"gateway,omitempty"`
	IPRange string `json:"ipRange,omitempty"`
	// IPv4Address is the pod's own address on the network: in its
	// subnet (which must then be given), used by no other pod.
	IPv4Address string `json:"ipv4Address,omitempty"`
	// EnableIPv6 makes the network dual-stack; IPv6Subnet, IPv6Gateway
	// and IPv6IPRange are its IPv6 pool (unset: the engine's choice,
	// which engines before Docker 27 cannot make without a default IPv6
	// pool), IPv6Address the pod's own IPv6 address, in IPv6Subnet.
	EnableIPv6  bool   `json:"enableIPv6,omitempty"`
	IPv6Subnet  string `json:"ipv6Subnet,omitempty"`
	IPv6Gateway string `json:"ipv6Gateway,omitempty"`
	IPv6IPRange string `json:"ipv6IPRange,omitempty"`
	IPv6Address string `json:"ipv6Address,omitempty"`
	// DriverOptions are the bridge driver's options of a network hostlet
	// creates (com.docker.network.bridge.name, ...enable_icc,
	// ...enable_ip_masquerade, ...host_binding_ipv4,
	// com.docker.network.driver.mtu,
	// com.docker.network.container_iface_prefix); a bridge name needs
	// the host config's policy.hostNetwork.
	DriverOptions map[string]string `json:"driverOptions,omitempty"`
}

// Container is one container of a pod.
type Container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	// ContainerName is the engine's name for the container (Compose's
	// container_name), kept through recreates; empty: hostlet names it.
	ContainerName string `json:"containerName,omitempty"`
	// Platform is the image's os/architecture[/variant] to run
	// (linux/amd64), which must be the engine's; empty: the engine's.
	Platform        string `json:"platform,omitempty"`
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// ImagePolicy lets `hostlet images` move Image to newer tags; no
	// part of any hash (see ImagePolicy).
	ImagePolicy *ImagePolicy `json:"imagePolicy,omitempty"`
	// Command replaces the image's ENTRYPOINT (and drops its CMD), as in
	// Kubernetes; Args replaces the CMD, after Command or the image's
	// ENTRYPOINT.
	Command      []string      `json:"command,omitempty"`
	Args         []string      `json:"args,omitempty"`
	WorkingDir   string        `json:"workingDir,omitempty"`
	Env          []EnvVar      `json:"env,omitempty"`
	Ports        []Port        `json:"ports,omitempty"`
	VolumeMounts []VolumeMount `json:"volumeMounts,omitempty"`
	// Memory is a limit in bytes; 0 means none.
	Memory int64 `json:"memory,omitempty"`
	// CPU is relative CPU shares; 0 means the default.
	CPU           int64  `json:"cpu,omitempty"`
	LivenessProbe *Probe `json:"livenessProbe,omitempty"`
	// ReadinessProbe has the shape of LivenessProbe; its failures never
	// restart the container, they keep the pod from being ready (an
	// update is done once the pod has been ready minReadySeconds).
	ReadinessProbe *Probe `json:"readinessProbe,omitempty"`
	// Lifecycle are the container's hooks: PostStart runs once it has
	// started (a failure stops it and fails the apply), PreStop before
	// hostlet stops it (within the pod's grace period, the stop signal
	// coming after it, at least 2 s before the end). No part of any hash.
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// StartupProbe has the shape of LivenessProbe and runs first: until
	// it passes, the liveness and readiness probes wait and the container
	// is not ready; failing failureThreshold times in a row restarts the
	// container, as a liveness probe does. It runs once per start.
	StartupProbe *Probe `json:"startupProbe,omitempty"`
	// User runs the container's process as user[:group] (a name or an
	// id) instead of the image's; GroupAdd gives it supplementary groups
	// (names of the image's /etc/group, or ids).
	User     string   `json:"user,omitempty"`
	GroupAdd []string `json:"groupAdd,omitempty"`
	// ReadOnly mounts the container's root filesystem read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
	// RunAsNonRoot: the container must not run as root. Without a user,
	// its image's USER is checked when the container is created (and
	// before anything running is stopped): a numeric user other than 0
	// passes; root, none, or a name (which cannot be checked without
	// the image's /etc/passwd) fails the pod. No part of the hash.
	RunAsNonRoot bool `json:"runAsNonRoot,omitempty"`
	// Init runs an init process (Docker's tini) as PID 1 that reaps
	// zombies and forwards signals.
	Init bool `json:"init,omitempty"`
	// StopSignal is sent to stop the container instead of the image's
	// (SIGTERM by default), e.g. SIGQUIT.
	StopSignal string `json:"stopSignal,omitempty"`
	// ShmSize is the size of /dev/shm in bytes; 0 means Docker's (64 MiB).
	ShmSize int64 `json:"shmSize,omitempty"`
	// TTY gives the process a terminal and StdinOpen keeps its standard
	// input open (Compose's tty and stdin_open): some images wait on one.
	TTY       bool `json:"tty,omitempty"`
	StdinOpen bool `json:"stdinOpen,omitempty"`
	// CPULimit caps the container's CPU time in thousandths of a CPU
	// (500 = half a CPU); 0 means none.
	CPULimit int64 `json:"cpuLimit,omitempty"`
	// Tmpfs are in-memory file systems mounted in the container, its own
	// (not shared with the pod's other containers) and empty at each
	// start.
	Tmpfs []Tmpfs `json:"tmpfs,omitempty"`
	// Runtime is the OCI runtime that runs the container (runc, the
	// engine's default, when empty); another needs the host config's
	// policy.runtimes.
	Runtime string `json:"runtime,omitempty"`
	// PidsLimit caps the processes and threads the container may have
	// at once (a fork bomb stops there); 0 means the engine's default
	// (Docker: none, Podman: 2048), -1 unlimited.
	PidsLimit int64 `json:"pidsLimit,omitempty"`
	// Healthcheck is the container's Docker healthcheck, run by the
	// engine: its state shows in status (healthy) and a dependent pod
	// may wait for it (dependsOn, condition Healthy).
	Healthcheck *Healthcheck `json:"healthcheck,omitempty"`

	// Privileged, CapAdd and Devices give the container power over the
	// host: each needs the host config's policy (privileged,
	// capabilities, devices). CapDrop (capability names, or ALL) is
	// always allowed. SecurityOpt: no-new-privileges, apparmor=PROFILE,
	// and (with policy.privileged) seccomp, apparmor or label
	// unconfined/disable.
	Privileged  bool     `json:"privileged,omitempty"`
	CapAdd      []string `json:"capAdd,omitempty"`
	CapDrop     []string `json:"capDrop,omitempty"`
	Devices     []Device `json:"devices,omitempty"`
	SecurityOpt []string `json:"securityOpt,omitempty"`
	// Ulimits are the process limits (nofile, nproc, ...); Sysctls the
	// namespaced kernel settings (net.*, kernel.shm*, kernel.msg*,
	// kernel.sem, fs.mqueue.*); Logging the engine's log driver.
	Ulimits []Ulimit          `json:"ulimits,omitempty"`
	Sysctls map[string]string `json:"sysctls,omitempty"`
	Logging *Logging          `json:"logging,omitempty"`

	// Build builds the image from files of the source (see Build): Image
	// is then hostlet's name for the result, and an image given beside
	// it is a name the result gets too.
	Build *Build `json:"build,omitempty"`
}

// Tmpfs is an in-memory file system at MountPath: SizeBytes bounds it
// (0: the engine's default, half the host's memory), Mode sets its
// folder's permission bits (an octal number such as 0o1777; 0: 0o1777),
// and Exec lets programs run from it (by default they may not, as the
// engine mounts it noexec, nosuid and nodev).
type Tmpfs struct {
	MountPath string `json:"mountPath"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
	Mode      uint32 `json:"mode,omitempty"`
	Exec      bool   `json:"exec,omitempty"`
}

// Device is a host device made available in the container.
type Device struct {
	// HostPath is the device on the host (/dev/ttyUSB0).
	HostPath string `json:"hostPath"`
	// ContainerPath is where it appears; HostPath when empty.
	ContainerPath string `json:"containerPath,omitempty"`
	// Permissions are cgroup permissions, some of r, w, m; rwm when
	// empty.
	Permissions string `json:"permissions,omitempty"`
}

// Ulimit is one process limit: soft at most hard (-1 for both:
// unlimited).
type Ulimit struct {
	Name string `json:"name"`
	Soft int64  `json:"soft"`
	Hard int64  `json:"hard"`
}

// Logging is the container's log driver and its options (json-file when
// unset: the engine's default).
type Logging struct {
	Driver  string            `json:"driver"`
	Options map[string]string `json:"options,omitempty"`
}

// Healthcheck is a Docker healthcheck: Command (exec form) or Shell (run by
// the image's shell), every IntervalSeconds, each run bounded by
// TimeoutSeconds, unhealthy after Retries failures in a row; failures in
// the first StartPeriodSeconds do not count. 0 means Docker's default
// (30 s, 30 s, 3, 0). Disable turns off a healthcheck the image has.
type Healthcheck struct {
	Command            []string `json:"command,omitempty"`
	Shell              string   `json:"shell,omitempty"`
	IntervalSeconds    int64    `json:"intervalSeconds,omitempty"`
	TimeoutSeconds     int64    `json:"timeoutSeconds,omitempty"`
	StartPeriodSeconds int64    `json:"startPeriodSeconds,omitempty"`
	Retries            int64    `json:"retries,omitempty"`
	Disable            bool     `json:"disable,omitempty"`
}

// EnvVar is one environment variable. Its value may be a secret: it never
// appears in logs, status or events.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Port is a container port, optionally published on the host.
type Port struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int    `json:"containerPort"`
	HostPort      int    `json:"hostPort,omitempty"`
	Protocol      string `json:"protocol,omitempty"`
	HostIP        string `json:"hostIP,omitempty"`
	// RandomHostPort publishes the port on a host port the engine picks
	// (Compose's "8080" without a host port), shown in /status; hostPort
	// stays unset.
	RandomHostPort bool `json:"randomHostPort,omitempty"`
}

// VolumeMount mounts a pod volume into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	// SELinuxRelabel has the engine relabel the mount's source for the
	// container's SELinux context: "z" shared with other containers, "Z"
	// private to this one (Compose's :z and :Z); not on a host path.
	SELinuxRelabel string `json:"selinuxRelabel,omitempty"`
}

// Probe is a liveness probe.
type Probe struct {
	Type                string     `json:"type"`
	HTTPGet             *HTTPGet   `json:"httpGet,omitempty"`
	TCPSocket           *TCPSocket `json:"tcpSocket,omitempty"`
	Exec                *Exec      `json:"exec,omitempty"`
	GRPC                *GRPC      `json:"grpc,omitempty"`
	InitialDelaySeconds int64      `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int64      `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int64      `json:"timeoutSeconds,omitempty"`
	FailureThreshold    int64      `json:"failureThreshold,omitempty"`
}

// HTTPGet probes with an HTTP GET; a 2xx or 3xx answer is healthy.
type HTTPGet struct {
	Path string `json:"path,omitempty"`
	Port string `json:"port"`
	Host string `json:"host,omitempty"`
	// HTTPHeaders are sent with the request, in order (a Host header
	// names the virtual host asked for).
	HTTPHeaders []HTTPHeader `json:"httpHeaders,omitempty"`
}

// HTTPHeader is one header of an HTTPGet.
type HTTPHeader struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MaxHTTPHeaders bounds the headers of one HTTPGet.
const MaxHTTPHeaders = 32

// Lifecycle are a container's hooks.
type Lifecycle struct {
	PostStart *Hook `json:"postStart,omitempty"`
	PreStop   *Hook `json:"preStop,omitempty"`
}

// Hook is one action of a lifecycle hook: a command run in the container
// (exit 0 succeeds), or, for preStop, an HTTP GET on the pod's address (a
// 2xx or 3xx answer succeeds) or a pause.
type Hook struct {
	Exec    *Exec    `json:"exec,omitempty"`
	HTTPGet *HTTPGet `json:"httpGet,omitempty"`
	// SleepSeconds waits so long instead (a preStop's pause for a load
	// balancer to let go of the pod), within the grace period.
	SleepSeconds int64 `json:"sleepSeconds,omitempty"`
}

// GRPC probes with the gRPC health checking protocol
// (grpc.health.v1.Health/Check, without TLS) on the pod's address:
// SERVING is healthy.
type GRPC struct {
	Port string `json:"port"`
	// Service is the service asked about ("": the server as a whole).
	Service string `json:"service,omitempty"`
}

// TCPSocket probes by opening a TCP connection.
type TCPSocket struct {
	Port string `json:"port"`
}

// Exec probes by running a command in the container; exit 0 is healthy.
type Exec struct {
	Command []string `json:"command"`
}

// Origin says where a manifest came from; it orders conflicts
// deterministically and names the manifest in errors.
type Origin struct {
	// Source is the configured source name.
	Source string `json:"source"`
	// File is the path of the file inside the source ("" for single-document sources).
	File string `json:"file,omitempty"`
	// Index is the position of the manifest in the file (document, then list item).
	Index int `json:"index"`
}

// String renders the origin as "source:file", the prefix of every error.
func (o Origin) String() string {
	if o.File == "" {
		return o.Source
	}
	if o.Source == "" {
		return o.File
	}
	return o.Source + ":" + o.File
}

// Sourced is a decoded manifest with its origin.
type Sourced struct {
	Origin   Origin
	Manifest Manifest
	// Errors are problems found while decoding that did not stop it
	// (unknown or duplicate fields). A manifest with errors is invalid;
	// validation reports them with its own.
	Errors []*Error
	// Keys name the manifest's fields as its author wrote them, where
	// that is another format (a Compose service's keys): a field path of
	// the manifest ("containers[0].capAdd") to the author's key
	// ("services.web.cap_add"). Nil for native manifests.
	Keys map[string]string `json:",omitempty"`
	// Hidden are what interpolation put into the manifest (from a
	// Compose project's .env or the host's compose.env): each
	// interpolated string, and each variable's value, that a value of
	// the manifest holds whole. An error about the manifest never shows
	// them: validate leaves them out as it builds an error, and they are
	// scrubbed from its text (redact.Hider). HiddenParts are the values of
	// the manifest that are a part of an interpolated string (a parser
	// split "${DEV}" into a host and a container path): never quoted in an
	// error, but not searched for in its text, as a part may be any word.
	// Both hold nothing but the manifest's own values and parts of them.
	Hidden      []string `json:",omitempty"`
	HiddenParts []string `json:",omitempty"`
	// Kube is a Kubernetes object of the source, not translated yet:
	// Manifest is then empty. Every reader of a source translates its
	// objects together before the source's snapshot is done (package
	// manifest/kube), so a snapshot never holds one.
	Kube *KubeObject `json:",omitempty"`
	// Notes are what a translation did that the author may not expect,
	// none of them an error (a Compose environment name without a value
	// left out, as Compose leaves it out): `hostlet validate` and `diff`
	// show them. Like errors, they name fields, never values.
	Notes []*Error `json:",omitempty"`
}

// Field is field (a path of the manifest's fields) as the author wrote
// it: the longest prefix of it that Keys names, replaced by that name
// (containers[0].capAdd[1] is services.web.cap_add[1]).
func (s Sourced) Field(field string) string {
	if len(s.Keys) == 0 {
		return field
	}
	for p := field; p != ""; p = parentField(p) {
		if k, ok := s.Keys[p]; ok {
			return k + field[len(p):]
		}
	}
	return field
}

// parentField is field without its last part ("a.b[2]" is "a.b", "a.b"
// is "a", "a" is "").
func parentField(field string) string {
	i := strings.LastIndexAny(field, ".[")
	if i < 0 {
		return ""
	}
	return field[:i]
}
