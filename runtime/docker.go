package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"

	"github.com/hostlet/hostlet/internal/clock"
)

// Docker is the container engine on the Docker Engine API. It only ever lists
// containers and volumes carrying io.hostlet.managed=true and its own
// io.hostlet.instance label, and of the containers only those it can prove
// it made (see Proven). It is safe for concurrent use.
type Docker struct {
	cli      *client.Client
	instance string
	log      *slog.Logger
	// configDir holds the Docker CLI config.json read for registry
	// credentials ($DOCKER_CONFIG, else ~/.docker).
	configDir string
	// pulls makes concurrent pulls of one image share one engine request
	// (see EnsureImage).
	pulls pullGroup
	// eventBackoffMax caps the wait between event stream reconnects.
	eventBackoffMax time.Duration
	// clock times every wait and duration of this Docker.
	clock clock.Clock
	// builder forces the build endpoint's builder ("1", "2"); "" lets
	// builderVersion choose. noBuildKit: the engine refused a BuildKit
	// build.
	builder    string
	noBuildKit atomic.Bool
	// networkMu serialises EnsureNetwork.
	networkMu gosync.Mutex
	// unproven reports the containers and events carrying this
	// instance's labels that are not proven hostlet's.
	unproven unprovenReport
	// ownerKey signs the names manifests choose (see Owner); named holds
	// the IDs of the containers proven under such a name, for events.
	ownerKey []byte
	named    namedIDs
	// engine is the engine d drives (detectEngine, at New).
	engine Engine
	// healthSeen holds, on Podman, the containers listed with a health
	// the last time (podmanHealth).
	healthSeen struct {
		gosync.Mutex
		ids map[string]bool
	}
	// stopHealthchecks ends the healthcheck runner (runHealthchecks) of
	// an engine that runs none itself, and waits for it; nil when none
	// runs.
	stopHealthchecks func()
}

// Option configures a Docker made by New.
type Option func(*Docker)

// WithBuilder makes every build use the builder of that version of the
// build endpoint ("1": the classic builder, "2": BuildKit) instead of
// the engine's default (what its /_ping answers).
func WithBuilder(version string) Option {
	return func(d *Docker) { d.builder = version }
}

// WithOwnerKey gives d the host's owner key: containers under the names
// manifests choose are signed with it at create and proven by it (see
// Owner). Without it, such a container is neither created nor proven.
func WithOwnerKey(key []byte) Option {
	return func(d *Docker) { d.ownerKey = append([]byte(nil), key...) }
}

// owner is what proves a container d's.
func (d *Docker) owner() Owner { return Owner{Instance: d.instance, Key: d.ownerKey} }

// WithClock makes d wait and measure on c (clock.Real when not given).
func WithClock(c clock.Clock) Option {
	return func(d *Docker) { d.clock = clock.Or(c) }
}

// New connects to the Docker engine at host ("" means $DOCKER_HOST, else the
// local socket), negotiating the API version, and pings it once: an
// unreachable engine is an error here, not on first use. instance scopes
// every list and label this Docker uses. log may be nil.
func New(ctx context.Context, host, instance string, log *slog.Logger, opts ...Option) (*Docker, error) {
	if instance == "" {
		return nil, errors.New("create docker runtime: instance must not be empty")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	copts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		copts = append(copts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(copts...)
	if err != nil {
		return nil, fmt.Errorf("create docker client for host %q: %w", host, err)
	}
	ping, err := cli.Ping(ctx)
	if err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker engine at %s is unreachable: %w", cli.DaemonHost(), translate(err))
	}
	cli.NegotiateAPIVersionPing(ping)

	configDir := os.Getenv("DOCKER_CONFIG")
	if configDir == "" {
		if home, err := os.UserHomeDir(); err == nil {
			configDir = filepath.Join(home, ".docker")
		}
	}
	log = log.With("component", "docker", "instance", instance)
	log.Debug("connected to docker engine", "host", cli.DaemonHost(), "api", cli.ClientVersion())
	d := &Docker{
		cli:             cli,
		instance:        instance,
		log:             log,
		configDir:       configDir,
		eventBackoffMax: 5 * time.Second,
		clock:           clock.Real{},
	}
	for _, o := range opts {
		o(d)
	}
	builder := ping.BuilderVersion
	if d.builder != "" {
		builder = build.BuilderVersion(d.builder)
	}
	if d.engine, err = detectEngine(ctx, cli, builder); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("docker engine at %s: %w", cli.DaemonHost(), err)
	}
	log.Debug("engine", "kind", d.engine.Kind, "version", d.engine.Version, "builder", d.engine.Builder, "imageStore", d.engine.ImageStore)
	for _, limit := range d.engine.Limits {
		log.Warn("engine limit", "engine", d.engine.Kind+" "+d.engine.Version, "limit", limit)
		if limit == limitHealthcheckTimers {
			d.startHealthchecks()
		}
	}
	return d, nil
}

// startHealthchecks starts the healthcheck runner; Close stops it.
func (d *Docker) startHealthchecks() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.runHealthchecks(ctx)
	}()
	d.stopHealthchecks = func() {
		cancel()
		<-done
	}
}

// Engine says which engine d drives and what it does differently, as
// read when New connected.
func (d *Docker) Engine() Engine { return d.engine }

// Close releases the client's connections.
func (d *Docker) Close() error {
	if d.stopHealthchecks != nil {
		d.stopHealthchecks()
	}
	if err := d.cli.Close(); err != nil {
		return fmt.Errorf("close docker client: %w", err)
	}
	return nil
}

// Instance returns the io.hostlet.instance label value this Docker scopes
// its queries to.
func (d *Docker) Instance() string { return d.instance }

// ownFilter matches the objects of this instance.
func (d *Docker) ownFilter() filters.Args {
	return filters.NewArgs(
		filters.Arg("label", LabelManaged+"=true"),
		filters.Arg("label", LabelInstance+"="+d.instance),
	)
}

// List returns every container this instance made, running or not, with
// exactly one engine call. The result is sorted by name. Only containers
// proven hostlet's are returned (see Proven): the others that carry this
// instance's labels are reported (a warning once each, Unproven), never
// returned, so nothing acts on them.
func (d *Docker) List(ctx context.Context) ([]Container, error) {
	list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: d.ownFilter()})
	if err != nil {
		return nil, fmt.Errorf("list containers of instance %q: %w", d.instance, translate(err))
	}
	out := make([]Container, 0, len(list))
	var unproven map[string]Container
	named := map[string]bool{}
	for _, s := range list {
		c := fromSummary(s, d.engine.Podman())
		name, ok := d.owner().provenName(s.Names, s.ImageID, c.Labels)
		if !ok {
			if unproven == nil {
				unproven = map[string]Container{}
			}
			unproven[c.ID] = c
			continue
		}
		c.Name = name
		switch chosen := c.Labels[LabelName]; {
		case chosen == "":
		case d.owner().signed(chosen, s.ImageID, c.Labels):
			// Under its chosen name, or still under its temporary one.
			named[c.ID] = true
		default:
			// Under hostlet's own name, with a name its image claims (a
			// docker commit of a named container): no name was chosen.
			delete(c.Labels, LabelName)
		}
		out = append(out, c)
	}
	d.named.listed(named)
	d.unproven.listedUnproven(d.log, unproven)
	if d.engine.Podman() {
		if err := d.podmanHealth(ctx, out); err != nil {
			return nil, err
		}
		clearJoinedIPs(out)
	}
	slices.SortFunc(out, func(a, b Container) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func fromSummary(s container.Summary, podman bool) Container {
	c := Container{
		ID:        s.ID,
		Image:     familiarImage(s.Image, podman),
		Labels:    s.Labels,
		State:     string(s.State),
		Status:    s.Status,
		Created:   time.Unix(s.Created, 0),
		ExitCode:  exitCodeFromStatus(s.Status),
		Health:    healthFromStatus(s.Status),
		Published: s.Ports,
	}
	if podman && c.State == "stopped" {
		// Podman's name for a container whose process ended and whose
		// cleanup has not run yet: exited, as far as a pod goes.
		c.State = StateExited
	}
	if len(s.Names) > 0 {
		c.Name = strings.TrimPrefix(s.Names[0], "/")
	}
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	// A container that joins another's network namespace has no address
	// of its own (Podman lists the namespace owner's under it).
	joined := strings.HasPrefix(s.HostConfig.NetworkMode, "container:")
	if s.NetworkSettings != nil && !joined {
		for _, name := range slices.Sorted(maps.Keys(s.NetworkSettings.Networks)) {
			if ep := s.NetworkSettings.Networks[name]; ep != nil && ep.IPAddress != "" {
				c.IP = ep.IPAddress
				break
			}
		}
	}
	return c
}

// healthFromStatus parses the healthcheck state out of a list entry's
// status, e.g. "Up 2 minutes (healthy)", "Up 3 seconds (health: starting)".
func healthFromStatus(status string) string {
	switch {
	case strings.HasSuffix(status, "(healthy)"):
		return HealthHealthy
	case strings.HasSuffix(status, "(unhealthy)"):
		return HealthUnhealthy
	case strings.HasSuffix(status, "(health: starting)"):
		return HealthStarting
	}
	return ""
}

// podmanHealth fills in the health of listed containers from lists
// filtered by health: Podman's list never says it in a container's
// status, as Docker's does ("Up 2 minutes (healthy)"). Three list calls,
// whatever the number of containers (Podman's health=none matches none).
// A running container that had a health and is in no list now changed
// it between two of them: it is taken as starting (not ready), not as one
// without a healthcheck.
func (d *Docker) podmanHealth(ctx context.Context, listed []Container) error {
	byID := make(map[string]*Container, len(listed))
	for i := range listed {
		byID[listed[i].ID] = &listed[i]
	}
	for _, health := range []string{HealthStarting, HealthUnhealthy, HealthHealthy} {
		f := d.ownFilter()
		f.Add("health", health)
		list, err := d.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		if err != nil {
			return fmt.Errorf("list %s containers of instance %q: %w", health, d.instance, translate(err))
		}
		for _, s := range list {
			if c := byID[s.ID]; c != nil {
				c.Health = health
			}
		}
	}
	d.healthSeen.Lock()
	defer d.healthSeen.Unlock()
	had := d.healthSeen.ids
	d.healthSeen.ids = make(map[string]bool, len(listed))
	for id, c := range byID {
		switch {
		case c.Health != "":
			d.healthSeen.ids[id] = true
		case had[id] && c.State == StateRunning:
			c.Health = HealthStarting
			d.healthSeen.ids[id] = true
		}
	}
	return nil
}

// healthConfig is Docker's healthcheck of a spec's.
func healthConfig(h *HealthSpec) *container.HealthConfig {
	if h == nil {
		return nil
	}
	hc := &container.HealthConfig{Interval: h.Interval, Timeout: h.Timeout, StartPeriod: h.StartPeriod, Retries: h.Retries}
	switch {
	case h.Disable:
		hc.Test = []string{"NONE"}
	case h.Shell != "":
		hc.Test = []string{"CMD-SHELL", h.Shell}
	default:
		hc.Test = append([]string{"CMD"}, h.Command...)
	}
	return hc
}

// exitCodeFromStatus parses the exit code out of a list entry's status,
// e.g. "Exited (137) 2 seconds ago"; 0 when there is none.
func exitCodeFromStatus(status string) int {
	rest, ok := strings.CutPrefix(status, "Exited (")
	if !ok {
		return 0
	}
	code, _, ok := strings.Cut(rest, ")")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(code)
	if err != nil {
		return 0
	}
	return n
}

// engineStopTimeout is how long Docker and Podman wait on a stop for a
// container created without a stop timeout.
const engineStopTimeout = 10 * time.Second

// Inspect returns what the list does not tell about a container.
func (d *Docker) Inspect(ctx context.Context, id string) (Details, error) {
	r, err := d.cli.ContainerInspect(ctx, id)
	if err != nil {
		return Details{}, fmt.Errorf("inspect container %s: %w", id, translate(err))
	}
	det := Details{ID: r.ID, RestartCount: r.RestartCount, Name: strings.TrimPrefix(r.Name, "/")}
	det.StopTimeout = engineStopTimeout
	if c := r.Config; c != nil {
		det.Image, det.Env, det.Labels = familiarImage(c.Image, d.engine.Podman()), c.Env, c.Labels
		det.Command = append(append([]string{}, c.Entrypoint...), c.Cmd...)
		if c.StopTimeout != nil {
			det.StopTimeout = time.Duration(*c.StopTimeout) * time.Second
		}
	}
	if h := r.HostConfig; h != nil {
		det.RestartPolicy = string(h.RestartPolicy.Name)
		if det.RestartPolicy == "" {
			det.RestartPolicy = RestartNo // the engine's empty name: none
		}
		det.NetworkMode = string(h.NetworkMode)
		for port, binds := range h.PortBindings {
			for _, b := range binds {
				det.Ports = append(det.Ports, fmt.Sprintf("%s:%s->%s", b.HostIP, b.HostPort, port))
			}
		}
		sort.Strings(det.Ports)
	}
	for _, m := range r.Mounts {
		mode := "rw"
		if !m.RW {
			mode = "ro"
		}
		src := m.Name
		if src == "" {
			src = m.Source
		}
		det.Mounts = append(det.Mounts, fmt.Sprintf("%s:%s:%s", src, m.Destination, mode))
	}
	if n := r.NetworkSettings; n != nil && !strings.HasPrefix(det.NetworkMode, "container:") {
		for _, name := range slices.Sorted(maps.Keys(n.Networks)) {
			if ep := n.Networks[name]; ep != nil && ep.IPAddress != "" {
				det.IP = ep.IPAddress
				break
			}
		}
	}
	if s := r.State; s != nil {
		det.StartedAt = parseEngineTime(s.StartedAt)
		det.FinishedAt = parseEngineTime(s.FinishedAt)
		det.ExitCode = s.ExitCode
		det.OOMKilled = s.OOMKilled
		det.Error = s.Error
		det.Running, det.Restarting = s.Running, s.Restarting
	}
	if det.Running && d.engine.Podman() && !d.processAlive(ctx, id) {
		// Podman's state lags behind a process that died (it learns it
		// from its cleanup process, seconds later under load): until
		// then the container is taken as being restarted.
		det.Restarting = true
	}
	return det, nil
}

// processAlive reports whether running container id still has a
// process, from its cgroup's pid count (Podman always has the pids
// controller: it sets a pids limit). A failed read answers true.
func (d *Docker) processAlive(ctx context.Context, id string) bool {
	st, err := d.Stats(ctx, id)
	return err != nil || st.Pids > 0
}

// parseEngineTime parses an RFC 3339 time from the engine; Docker's
// "0001-01-01T00:00:00Z" for "never" and garbage both give the zero time.
func parseEngineTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

// Create creates (does not start) a container. spec.Command, when set,
// replaces the image's ENTRYPOINT and drops its CMD, as a Kubernetes
// command does. A container joining another's network namespace
// (NetworkMode "container:<id>") gets no port settings: the namespace
// owner publishes them. A name already in use is an ErrConflict.
func (d *Docker) Create(ctx context.Context, spec ContainerSpec) (string, error) {
	if err := d.signName(ctx, &spec); err != nil {
		return "", fmt.Errorf("create container %q: %w", spec.Name, err)
	}
	cfg, hostCfg, err := dockerConfig(spec)
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", spec.Name, err)
	}
	if hostCfg.LogConfig.Type == "" && len(hostCfg.LogConfig.Config) > 0 {
		// Options for the default driver, named: Podman drops options
		// given without a driver.
		hostCfg.LogConfig.Type = d.engine.LogDriver
	}
	atCreate, after := d.splitNetworks(spec.Networks)
	resp, err := d.cli.ContainerCreate(ctx, cfg, hostCfg, networkingConfig(atCreate), ociPlatform(spec.Platform), spec.Name)
	if err != nil {
		return "", fmt.Errorf("create container %q from image %s: %w", spec.Name, spec.Image, translate(err))
	}
	if len(after) > 0 {
		if err := d.connectNetworks(ctx, resp.ID, after); err != nil {
			// Not left half-joined, to be started as it is by a later sync.
			return "", fmt.Errorf("create container %q: %w", spec.Name, d.removeCreated(ctx, resp.ID, err))
		}
	}
	if d.engine.Podman() {
		if err := d.checkApplied(ctx, resp.ID, cfg, hostCfg); err != nil {
			return "", fmt.Errorf("create container %q: %w", spec.Name, d.removeCreated(ctx, resp.ID, err))
		}
	}
	for _, w := range resp.Warnings {
		d.log.Warn("engine warning on container create", "container", spec.Name, "warning", w)
	}
	if err := d.checkSigned(ctx, resp.ID, spec); err != nil {
		return "", fmt.Errorf("create container %q: %w", spec.Name, err)
	}
	if spec.Labels[LabelName] != "" {
		d.named.add(resp.ID)
	}
	d.log.Debug("created container", "container", spec.Name, "id", resp.ID)
	return resp.ID, nil
}

// dockerConfig maps a ContainerSpec onto Docker's create request.
func dockerConfig(spec ContainerSpec) (*container.Config, *container.HostConfig, error) {
	cfg := &container.Config{
		Image:       spec.Image,
		Env:         spec.Env,
		WorkingDir:  spec.WorkingDir,
		Labels:      spec.Labels,
		Healthcheck: healthConfig(spec.Healthcheck),
		User:        spec.User,
		StopSignal:  spec.StopSignal,
		Hostname:    spec.Hostname,
		Domainname:  spec.Domainname,
		Tty:         spec.TTY,
		OpenStdin:   spec.StdinOpen,
	}
	if len(spec.Command) > 0 {
		cfg.Entrypoint = spec.Command
		cfg.Cmd = nil
	}
	if len(spec.Args) > 0 {
		cfg.Cmd = spec.Args
	}
	if spec.StopTimeout > 0 {
		secs := int(math.Ceil(spec.StopTimeout.Seconds()))
		cfg.StopTimeout = &secs
	}
	restart, err := restartPolicy(spec.RestartPolicy)
	if err != nil {
		return nil, nil, err
	}
	mode := spec.NetworkMode
	if mode == "" && len(spec.Networks) > 0 {
		mode = spec.Networks[0].Name
	}
	hostCfg := &container.HostConfig{
		NetworkMode:    container.NetworkMode(mode),
		RestartPolicy:  restart,
		ReadonlyRootfs: spec.ReadOnly,
		ShmSize:        spec.ShmSize,
		Tmpfs:          spec.Tmpfs,
		GroupAdd:       spec.GroupAdd,
		Runtime:        spec.Runtime,
		ExtraHosts:     spec.ExtraHosts,
		DNS:            spec.DNS,
		DNSSearch:      spec.DNSSearch,
		Resources: container.Resources{
			Memory:    spec.Memory,
			CPUShares: spec.CPUShares,
			NanoCPUs:  spec.NanoCPUs,
			PidsLimit: pidsLimit(spec.PidsLimit),
		},
	}
	if spec.Init {
		init := true
		hostCfg.Init = &init
	}
	hostAccess(spec, hostCfg)
	if spec.Memory > 0 {
		// No swap on top of the limit, as in Kubernetes (Docker's default
		// would allow as much swap again).
		hostCfg.MemorySwap = spec.Memory
	}
	if !hostCfg.NetworkMode.IsContainer() && !hostCfg.NetworkMode.IsHost() && len(spec.Ports) > 0 {
		if cfg.ExposedPorts, hostCfg.PortBindings, err = portBindings(spec.Ports); err != nil {
			return nil, nil, err
		}
	}
	if hostCfg.Mounts, hostCfg.Binds, err = mounts(spec.Mounts); err != nil {
		return nil, nil, err
	}
	return cfg, hostCfg, nil
}

// hostAccess sets the spec's privileges, capabilities, devices, security
// options, limits, sysctls, log driver and host namespaces.
func hostAccess(spec ContainerSpec, hostCfg *container.HostConfig) {
	hostCfg.Privileged = spec.Privileged
	hostCfg.CapAdd, hostCfg.CapDrop = spec.CapAdd, spec.CapDrop
	for _, o := range spec.SecurityOpt {
		if o == "systempaths=unconfined" {
			// The CLI's option, not the engine's: no masked and no
			// read-only system paths.
			hostCfg.MaskedPaths, hostCfg.ReadonlyPaths = []string{}, []string{}
			continue
		}
		hostCfg.SecurityOpt = append(hostCfg.SecurityOpt, o)
	}
	hostCfg.Sysctls = spec.Sysctls
	hostCfg.PidMode, hostCfg.IpcMode = container.PidMode(spec.PidMode), container.IpcMode(spec.IpcMode)
	for _, d := range spec.Devices {
		hostCfg.Devices = append(hostCfg.Devices, container.DeviceMapping{PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: d.Permissions})
	}
	for _, u := range spec.Ulimits {
		hostCfg.Ulimits = append(hostCfg.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if spec.LogDriver != "" || len(spec.LogOptions) > 0 {
		// No driver: the engine's default one, with these options.
		hostCfg.LogConfig = container.LogConfig{Type: spec.LogDriver, Config: spec.LogOptions}
	}
}

// restartPolicy is Docker's restart policy for a spec's.
func restartPolicy(policy string) (container.RestartPolicy, error) {
	restart := container.RestartPolicy{Name: container.RestartPolicyDisabled}
	switch policy {
	case "", RestartNo:
	case RestartAlways:
		restart.Name = container.RestartPolicyAlways
	case RestartOnFailure:
		restart.Name = container.RestartPolicyOnFailure // MaximumRetryCount 0: no limit
	default:
		return restart, fmt.Errorf("unknown restart policy %q", policy)
	}
	return restart, nil
}

// portBindings are the ports a container exposes and the host ports bound
// to them.
func portBindings(ports []Port) (nat.PortSet, nat.PortMap, error) {
	exposed, bindings := nat.PortSet{}, nat.PortMap{}
	for _, p := range ports {
		proto := strings.ToLower(cmp.Or(p.Protocol, "tcp"))
		port, err := nat.NewPort(proto, strconv.Itoa(p.ContainerPort))
		if err != nil {
			return nil, nil, fmt.Errorf("port %d/%s: %w", p.ContainerPort, proto, err)
		}
		exposed[port] = struct{}{}
		switch {
		case p.HostPort != 0:
			bindings[port] = append(bindings[port], nat.PortBinding{
				HostIP:   p.HostIP,
				HostPort: strconv.Itoa(p.HostPort),
			})
		case p.Random:
			bindings[port] = append(bindings[port], nat.PortBinding{HostIP: p.HostIP})
		}
	}
	return exposed, bindings, nil
}

// mounts are Docker's mounts for a spec's (nil for none), and the binds of those
// the engine relabels (only the bind form can ask for it).
func mounts(ms []Mount) ([]mount.Mount, []string, error) {
	var out []mount.Mount
	var binds []string
	for _, m := range ms {
		var typ mount.Type
		switch m.Type {
		case MountVolume:
			typ = mount.TypeVolume
		case MountBind:
			typ = mount.TypeBind
		default:
			return nil, nil, fmt.Errorf("mount at %s: unknown type %q", m.Target, m.Type)
		}
		if m.Relabel != "" {
			// Only the bind form relabels: "source:target:rw,z". The
			// source exists (a volume hostlet made, a folder it made).
			if (m.Relabel != "z" && m.Relabel != "Z") || strings.ContainsAny(m.Source+m.Target, ":,") {
				return nil, nil, fmt.Errorf("mount at %s: relabel %q of %q cannot be given to the engine", m.Target, m.Relabel, m.Source)
			}
			mode := "rw"
			if m.ReadOnly {
				mode = "ro"
			}
			opts := mode + "," + m.Relabel
			if m.NoCopy && typ == mount.TypeVolume {
				opts += ",nocopy"
			}
			binds = append(binds, m.Source+":"+m.Target+":"+opts)
			continue
		}
		mt := mount.Mount{
			Type:     typ,
			Source:   m.Source,
			Target:   m.Target,
			ReadOnly: m.ReadOnly,
		}
		if m.NoCopy && typ == mount.TypeVolume {
			mt.VolumeOptions = &mount.VolumeOptions{NoCopy: true}
		}
		out = append(out, mt)
	}
	return out, binds, nil
}

// Start starts a created or stopped container.
func (d *Docker) Start(ctx context.Context, id string) error {
	if err := d.cli.ContainerStart(ctx, id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container %s: %w", id, startError(id, err))
	}
	return nil
}

// Wait waits until container id is not running (it exited, or was never
// started) and returns its exit code; ctx bounds the wait.
func (d *Docker) Wait(ctx context.Context, id string) (int, error) {
	results, errs := d.cli.ContainerWait(ctx, id, container.WaitConditionNotRunning)
	select {
	case r := <-results:
		if r.Error != nil && r.Error.Message != "" {
			return 0, fmt.Errorf("wait for container %s: %s", id, r.Error.Message)
		}
		return int(r.StatusCode), nil
	case err := <-errs:
		return 0, fmt.Errorf("wait for container %s: %w", id, translate(err))
	}
}

// stopOptions turns a grace period into Docker's whole seconds (rounded
// up). A negative timeout sends none: the engine then waits the stop
// timeout recorded when the container was created (sync.DefaultStopTimeout,
// for pods whose manifest is gone).
func stopOptions(timeout time.Duration) container.StopOptions {
	if timeout < 0 {
		return container.StopOptions{}
	}
	secs := int(math.Ceil(timeout.Seconds()))
	return container.StopOptions{Timeout: &secs}
}

// Stop sends SIGTERM (or the image's stop signal) and SIGKILL after
// timeout (a negative timeout: after the container's own stop timeout).
// Stopping a stopped container is not an error.
func (d *Docker) Stop(ctx context.Context, id string, timeout time.Duration) error {
	if err := d.cli.ContainerStop(ctx, id, stopOptions(timeout)); err != nil {
		return fmt.Errorf("stop container %s: %w", id, translate(err))
	}
	return nil
}

// NoRestart sets container id's restart policy to "no": a container kept
// stopped for a while (a recreate removes it once its successor has
// started) is not started again by the engine when the engine restarts,
// which starts every container of policy "always", stopped by hand or
// not.
func (d *Docker) NoRestart(ctx context.Context, id string) error {
	return d.updateRestartPolicy(ctx, id, RestartNo)
}

// RestoreRestart sets container id's restart policy back to policy (one
// of the spec's: RestartAlways, RestartOnFailure, RestartNo), as created:
// a container NoRestart cleared that is started again rather than
// removed (the change it made way for was reverted).
func (d *Docker) RestoreRestart(ctx context.Context, id, policy string) error {
	return d.updateRestartPolicy(ctx, id, policy)
}

// updateRestartPolicy changes container id's restart policy.
func (d *Docker) updateRestartPolicy(ctx context.Context, id, policy string) error {
	restart, err := restartPolicy(policy)
	if err != nil {
		return fmt.Errorf("set the restart policy of container %s: %w", id, err)
	}
	if _, err := d.cli.ContainerUpdate(ctx, id, container.UpdateConfig{RestartPolicy: restart}); err != nil {
		return fmt.Errorf("set the restart policy of container %s to %s: %w", id, policy, translate(err))
	}
	return nil
}

// Restart stops (with timeout) and starts a container; the engine counts it
// in neither RestartCount nor the restart policy.
func (d *Docker) Restart(ctx context.Context, id string, timeout time.Duration) error {
	if err := d.cli.ContainerRestart(ctx, id, stopOptions(timeout)); err != nil {
		return fmt.Errorf("restart container %s: %w", id, translate(err))
	}
	return nil
}

// Remove kills and removes a container with its anonymous volumes. A
// container that does not exist (or is already being removed) is not an
// error. A conflict is retried a few times: Docker 20.10 refuses to remove
// a container caught between a crash and its restart ("Could not kill
// running container ..., cannot remove - Container ... is not running").
func (d *Docker) Remove(ctx context.Context, id string) error {
	var err error
	for attempt, wait := 1, 100*time.Millisecond; ; attempt, wait = attempt+1, 2*wait {
		err = translate(d.cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true}))
		switch {
		case err == nil:
			d.log.Debug("removed container", "id", id)
			return nil
		case IsNotFound(err):
			return nil
		case IsConflict(err) && strings.Contains(err.Error(), "already in progress"):
			return nil
		}
		if !IsConflict(err) || attempt == 4 {
			break
		}
		d.log.Debug("container removal refused; retrying", "id", id, "error", err, "retry_in", wait)
		if !clock.Sleep(ctx, d.clock, wait) {
			return fmt.Errorf("remove container %s: %w (gave up: %w)", id, err, ctx.Err())
		}
	}
	return fmt.Errorf("remove container %s: %w", id, err)
}

// Exec runs cmd in a running container and returns its exit code. The
// output is read and discarded. When ctx ends first, Exec returns ctx's
// error; the engine gives no way to kill an exec, so the process may run on
// inside the container.
func (d *Docker) Exec(ctx context.Context, id string, cmd []string) (int, error) {
	if len(cmd) == 0 {
		return -1, fmt.Errorf("exec in container %s: empty command", id)
	}
	created, err := d.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		Cmd:          cmd,
		AttachStdout: true,
		AttachStderr: true,
	})
	if err != nil {
		return -1, fmt.Errorf("create exec %q in container %s: %w", cmd[0], id, translate(err))
	}
	att, err := d.cli.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, fmt.Errorf("start exec %q in container %s: %w", cmd[0], id, translate(err))
	}
	// The hijacked connection ignores ctx once established: close it when
	// ctx ends so the read below returns.
	stop := context.AfterFunc(ctx, att.Close)
	_, copyErr := io.Copy(io.Discard, att.Reader)
	stop()
	att.Close()
	if err := ctx.Err(); err != nil {
		return -1, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, err)
	}
	if copyErr != nil {
		return -1, fmt.Errorf("read output of exec %q in container %s: %w", cmd[0], id, copyErr)
	}
	// The stream ends when the process exits, but the engine may need a
	// moment to record the exit code.
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		ins, err := d.cli.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return -1, fmt.Errorf("inspect exec %q in container %s: %w", cmd[0], id, translate(err))
		}
		if !ins.Running {
			return ins.ExitCode, nil
		}
		if !clock.Sleep(ctx, d.clock, wait) {
			return -1, fmt.Errorf("exec %q in container %s: %w", cmd[0], id, ctx.Err())
		}
	}
}

// pidsLimit is the engine's value of a spec's PidsLimit: nil (the
// engine's default) for 0.
func pidsLimit(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}
