package runtime

import (
	"time"

	"github.com/docker/docker/api/types/container"
)

// Labels hostlet puts on every container and volume it creates. Labels are
// the source of truth; names are for humans.
const (
	LabelManaged   = "io.hostlet.managed"
	LabelPod       = "io.hostlet.pod"
	LabelContainer = "io.hostlet.container"
	LabelHash      = "io.hostlet.hash"
	LabelSource    = "io.hostlet.source"
	LabelRevision  = "io.hostlet.revision"
	LabelInstance  = "io.hostlet.instance"
	// LabelVolume names the pod volume a Docker volume backs.
	LabelVolume = "io.hostlet.volume"
	// LabelPersistent marks a named Docker volume (a pod's dockerVolume):
	// it outlives its pods and is removed only on request.
	LabelPersistent = "io.hostlet.persistent"
	// LabelFSGroup is, on a volume made for a pod with an fsGroup, that
	// group: on Podman it is also the volume's group at creation, so
	// that Podman does not give the empty volume to the first
	// container's user (its first-use chown), undoing hostlet's.
	LabelFSGroup = "io.hostlet.fsgroup"
	// LabelPodIP is, on a container reading its pod's address
	// (status.podIP), the address it was created with: a container whose
	// pod's address changed since is created anew.
	LabelPodIP = "io.hostlet.pod-ip"
	// LabelName is the name a manifest gives a container (Compose's
	// container_name); LabelNameProof proves that hostlet made the
	// container under it (see Owner).
	LabelName      = "io.hostlet.name"
	LabelNameProof = "io.hostlet.name-proof"
)

// InfraName is the io.hostlet.container label value of a pod's infra container.
const InfraName = "POD"

// Container states as Docker reports them.
const (
	StateCreated    = "created"
	StateRunning    = "running"
	StateRestarting = "restarting"
	StateExited     = "exited"
	StatePaused     = "paused"
	StateDead       = "dead"
	StateRemoving   = "removing"
)

// Container is one managed container as a single list call reports it.
type Container struct {
	ID      string
	Name    string
	Image   string
	Labels  map[string]string
	State   string
	Status  string
	Created time.Time
	// ExitCode is parsed from Status for exited containers.
	ExitCode int
	// IP is the container's address on its network ("" when it joins another
	// container's network namespace).
	IP string
	// Health is the state of the container's Docker healthcheck, from
	// Status: HealthHealthy, HealthUnhealthy, HealthStarting, or "" (none).
	Health string
	// Published are its ports as the engine's list reports them (the
	// list's own slice, not copied).
	Published []PublishedPort
}

// PublishedPort is a port of a container as the engine's list reports
// it: the host port it is published on (PublicPort, 0 for none).
type PublishedPort = container.Port

// Docker healthcheck states of a Container.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthStarting  = "starting"
)

// HealthSpec is a container's Docker healthcheck (see manifest.Healthcheck).
type HealthSpec struct {
	Command                        []string
	Shell                          string
	Disable                        bool
	Interval, Timeout, StartPeriod time.Duration
	Retries                        int
}

// Pod returns the container's io.hostlet.pod label.
func (c Container) Pod() string { return c.Labels[LabelPod] }

// Slot returns the container's io.hostlet.container label (InfraName for infra).
func (c Container) Slot() string { return c.Labels[LabelContainer] }

// Hash returns the container's io.hostlet.hash label.
func (c Container) Hash() string { return c.Labels[LabelHash] }

// Running reports whether the container is running (or being restarted by
// the engine).
func (c Container) Running() bool { return c.State == StateRunning || c.State == StateRestarting }

// Details is what an inspect adds to a list entry.
type Details struct {
	ID           string    `json:"id"`
	RestartCount int       `json:"restartCount"`
	StartedAt    time.Time `json:"startedAt"`
	FinishedAt   time.Time `json:"finishedAt"`
	ExitCode     int       `json:"exitCode"`
	OOMKilled    bool      `json:"oomKilled"`
	Error        string    `json:"error"`
	Running      bool      `json:"running"`
	// Restarting: the engine waits to start the container again (it
	// reports it running meanwhile). Not in the pods API's document.
	Restarting bool `json:"-"`

	Name    string   `json:"name"`
	Image   string   `json:"image"`
	Command []string `json:"command"`
	// Env holds NAME=VALUE pairs as the engine has them: secrets. Never
	// show them; hash the values first.
	Env    []string          `json:"env"`
	Labels map[string]string `json:"labels"`
	// RestartPolicy is the engine's: always, on-failure, unless-stopped
	// or no (none, also where the engine names it "").
	RestartPolicy string `json:"restartPolicy"`
	NetworkMode   string `json:"networkMode"`
	// Ports are "hostIP:hostPort->containerPort/proto".
	Ports []string `json:"ports"`
	// Mounts are "source:destination:rw|ro".
	Mounts []string `json:"mounts"`
	// IP is the container's address on its network ("" when it joins
	// another's network namespace, or the host's). Not in the pods API's
	// document.
	IP string `json:"-"`
	// StopTimeout is how long a stop waits for the container's process
	// before it is killed, as recorded at its creation (the engine's
	// default, 10 s, where none was). Not in the pods API's document.
	StopTimeout time.Duration `json:"-"`
}

// Port publishes a container port on the host.
type Port struct {
	ContainerPort int
	HostPort      int
	// Protocol is "tcp" or "udp".
	Protocol string
	HostIP   string
	// Random publishes the port on a host port the engine picks
	// (HostPort 0).
	Random bool
}

// Mount types.
const (
	MountVolume = "volume"
	MountBind   = "bind"
)

// Mount is a volume or host directory mounted into a container.
type Mount struct {
	Type     string
	Source   string
	Target   string
	ReadOnly bool
	// Relabel is "z" or "Z" to have the engine relabel the source for
	// SELinux, "" for none.
	Relabel string
	// NoCopy: an empty volume is not filled from the image's folder at
	// the mount path, nor given that folder's owner and mode.
	NoCopy bool
}

// Docker restart policies.
const (
	RestartAlways    = "always"
	RestartOnFailure = "on-failure"
	RestartNo        = "no"
)

// ContainerSpec is everything needed to create one container.
type ContainerSpec struct {
	Name  string
	Image string
	// Command replaces the image's entrypoint (and its cmd); Args, when
	// set, replaces the cmd.
	Command    []string
	Args       []string
	Env        []string
	WorkingDir string
	Labels     map[string]string
	// NetworkMode is "" for the default bridge (or the first of
	// Networks) or "container:<id>" to join another container's network
	// namespace.
	NetworkMode string
	// Networks are user-defined networks to join: all at creation on an
	// engine whose API takes several there (1.44, Docker 25, not Podman),
	// else the first at creation and the others right after; they must
	// exist (EnsureNetwork).
	Networks []NetworkSpec
	// Healthcheck, when set, is the container's Docker healthcheck.
	Healthcheck *HealthSpec
	// Hostname, Domainname, ExtraHosts, DNS and DNSSearch set up the network
	// namespace the container holds (not one it joins).
	Hostname   string
	Domainname string
	ExtraHosts []string
	DNS        []string
	DNSSearch  []string
	// User, ReadOnly (root filesystem), Init (tini as PID 1), StopSignal,
	// ShmSize (bytes), NanoCPUs (a CPU limit in billionths of a CPU) and
	// PidsLimit (-1: unlimited): Docker's own settings, unset when zero.
	User       string
	ReadOnly   bool
	Init       bool
	StopSignal string
	ShmSize    int64
	// TTY and StdinOpen: a terminal, and an open standard input.
	TTY, StdinOpen bool
	NanoCPUs       int64
	PidsLimit      int64
	// GroupAdd are supplementary groups of the process (names or ids).
	GroupAdd []string
	// Runtime is the OCI runtime (the engine's default when empty).
	Runtime string
	// Platform is the image platform to run (os/arch[/variant]); "":
	// the engine's.
	Platform string
	// signedImage is the image ID a chosen name's proof is for (set by
	// Create).
	signedImage string
	// Tmpfs are in-memory mounts by path, each with its mount options
	// (size=, mode=, exec).
	Tmpfs  map[string]string
	Ports  []Port
	Mounts []Mount
	// Memory is a limit in bytes, 0 for none.
	Memory int64
	// CPUShares is the relative CPU weight, 0 for the default.
	CPUShares     int64
	RestartPolicy string
	// StopTimeout is the grace period before SIGKILL.
	StopTimeout time.Duration
	// The host's access: Docker's own settings, unset when zero.
	// PidMode and IpcMode are "" or "host"; NetworkMode "host" is the
	// host's network.
	Privileged  bool
	CapAdd      []string
	CapDrop     []string
	Devices     []Device
	SecurityOpt []string
	Ulimits     []Ulimit
	Sysctls     map[string]string
	LogDriver   string
	LogOptions  map[string]string
	PidMode     string
	IpcMode     string
}

// Device is a host device given to a container.
type Device struct {
	HostPath, ContainerPath, Permissions string
}

// Ulimit is a process limit.
type Ulimit struct {
	Name       string
	Soft, Hard int64
}

// EventStreamBroke is the Action of the event Events sends, each second,
// while the engine whose event stream broke does not answer a ping, with
// the time: the engine is down or restarting, and the exits and restarts
// around it are its doing. A stream that closes while the engine answers
// sends none.
const EventStreamBroke = "hostlet-stream-broke"

// Event is a container event from the engine.
type Event struct {
	// Action is Docker's action: "die", "start", "oom", "destroy", ...
	// or EventStreamBroke (no container, no labels).
	Action      string
	ContainerID string
	Labels      map[string]string
	// ExitCode is set for "die".
	ExitCode int
	Time     time.Time
}
