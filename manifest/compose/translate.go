package compose

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/docker/go-units"
	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
)

// Labels hostlet puts on a Compose service's containers, the ones docker
// compose ps and logs find them by.
const (
	LabelProject         = "com.docker.compose.project"
	LabelService         = "com.docker.compose.service"
	LabelContainerNumber = "com.docker.compose.container-number"
	LabelOneoff          = "com.docker.compose.oneoff"
	labelPrefix          = "com.docker.compose."
)

// supportedPaths are the Compose attributes hostlet applies, in
// compose-go's canonical form (long syntax). Every other attribute of a
// project is refused by name; x- extensions are not attributes.
var supportedPaths = paths(
	"name",
	"services", "services.*",
	"services.*.image",
	"services.*.command", "services.*.command.[]",
	"services.*.entrypoint", "services.*.entrypoint.[]",
	"services.*.environment", "services.*.environment.*",
	"services.*.env_file", "services.*.env_file.[]", "services.*.env_file.[].path", "services.*.env_file.[].required", "services.*.env_file.[].format",
	"services.*.ports", "services.*.ports.[]", "services.*.ports.[].target", "services.*.ports.[].published", "services.*.ports.[].protocol", "services.*.ports.[].host_ip", "services.*.ports.[].mode", "services.*.ports.[].name", "services.*.ports.[].app_protocol",
	"services.*.expose", "services.*.expose.[]",
	"services.*.labels", "services.*.labels.*",
	"services.*.working_dir",
	"services.*.hostname", "services.*.domainname", "services.*.extra_hosts", "services.*.extra_hosts.*", "services.*.extra_hosts.*.[]", "services.*.extra_hosts.[]",
	"services.*.links", "services.*.links.[]",
	"services.*.dns", "services.*.dns.[]", "services.*.dns_search", "services.*.dns_search.[]",
	"services.*.runtime", "services.*.user", "services.*.group_add", "services.*.group_add.[]", "services.*.read_only", "services.*.init", "services.*.stop_signal", "services.*.shm_size", "services.*.tty", "services.*.stdin_open", "services.*.cpus",
	"services.*.deploy.resources.limits.cpus", "services.*.deploy.resources.limits.pids", "services.*.pids_limit",
	"services.*.depends_on", "services.*.depends_on.*", "services.*.depends_on.*.condition", "services.*.depends_on.*.required", "services.*.depends_on.*.restart",
	"services.*.healthcheck", "services.*.healthcheck.test", "services.*.healthcheck.test.[]", "services.*.healthcheck.interval",
	"services.*.healthcheck.timeout", "services.*.healthcheck.retries", "services.*.healthcheck.start_period", "services.*.healthcheck.disable",
	"services.*.restart",
	"services.*.stop_grace_period",
	"services.*.mem_limit",
	"services.*.cpu_shares",
	"services.*.pull_policy",
	"services.*.scale",
	"services.*.container_name",
	"services.*.platform",
	"services.*.profiles", "services.*.profiles.[]",
	"services.*.deploy", "services.*.deploy.replicas", "services.*.deploy.mode", "services.*.deploy.resources", "services.*.deploy.resources.limits", "services.*.deploy.resources.limits.memory",
	// Updates: monitor is the pod's minReadySeconds, failure_action its
	// rollback policy; the other keys schedule swarm tasks, which a host
	// does not have.
	"services.*.deploy.update_config", "services.*.deploy.update_config.monitor", "services.*.deploy.update_config.failure_action",
	"services.*.networks", "services.*.networks.*", "services.*.networks.*.aliases", "services.*.networks.*.aliases.[]",
	"networks", "networks.*", "networks.*.name", "networks.*.external", "networks.*.internal", "networks.*.driver",
	"networks.*.ipam", "networks.*.ipam.driver", "networks.*.ipam.config", "networks.*.ipam.config.[]", "networks.*.ipam.config.[].subnet", "networks.*.ipam.config.[].gateway", "networks.*.ipam.config.[].ip_range",
	"services.*.networks.*.ipv4_address", "services.*.networks.*.ipv6_address",
	"networks.*.enable_ipv6", "networks.*.driver_opts", "networks.*.driver_opts.*",
	"services.*.volumes", "services.*.volumes.[]", "services.*.volumes.[].type", "services.*.volumes.[].source", "services.*.volumes.[].target", "services.*.volumes.[].read_only", "services.*.volumes.[].bind", "services.*.volumes.[].bind.create_host_path", "services.*.volumes.[].bind.selinux",
	// A named volume's options are refused by the translation, naming the
	// volume, as tmpfs is.
	"services.*.volumes.[].volume", "services.*.volumes.[].volume.*", "services.*.volumes.[].tmpfs", "services.*.volumes.[].tmpfs.size", "services.*.volumes.[].tmpfs.mode",
	"services.*.tmpfs", "services.*.tmpfs.[]",
	"volumes", "volumes.*", "volumes.*.name", "volumes.*.external", "volumes.*.driver",
	// Configs and secrets: files of the project, a content or a variable;
	// external ones, uid and gid are refused by the translation.
	"configs", "configs.*", "configs.*.name", "configs.*.file", "configs.*.content", "configs.*.environment", "configs.*.external",
	"secrets", "secrets.*", "secrets.*.name", "secrets.*.file", "secrets.*.environment", "secrets.*.external",
	"services.*.configs", "services.*.configs.[]", "services.*.configs.[].source", "services.*.configs.[].target", "services.*.configs.[].mode", "services.*.configs.[].uid", "services.*.configs.[].gid",
	"services.*.secrets", "services.*.secrets.[]", "services.*.secrets.[].source", "services.*.secrets.[].target", "services.*.secrets.[].mode", "services.*.secrets.[].uid", "services.*.secrets.[].gid",
	// The host's access: checked against the host config's policy by
	// validation, as a native pod's.
	"services.*.privileged", "services.*.cap_add", "services.*.cap_add.[]", "services.*.cap_drop", "services.*.cap_drop.[]",
	"services.*.devices", "services.*.devices.[]", "services.*.devices.[].source", "services.*.devices.[].target", "services.*.devices.[].permissions",
	"services.*.security_opt", "services.*.security_opt.[]",
	"services.*.ulimits", "services.*.ulimits.*", "services.*.ulimits.*.single", "services.*.ulimits.*.soft", "services.*.ulimits.*.hard",
	"services.*.sysctls", "services.*.sysctls.*", "services.*.sysctls.[]",
	"services.*.logging", "services.*.logging.driver", "services.*.logging.options", "services.*.logging.options.*",
	"services.*.network_mode", "services.*.pid", "services.*.ipc",
	// Builds (manifest/buildctx): a folder of the project, built by the
	// engine; other build keys are refused by name.
	"services.*.build", "services.*.build.context", "services.*.build.dockerfile", "services.*.build.dockerfile_inline",
	"services.*.build.args", "services.*.build.args.*", "services.*.build.args.[]", "services.*.build.target",
	"services.*.build.labels", "services.*.build.labels.*", "services.*.build.labels.[]", "services.*.build.network",
	"services.*.build.extra_hosts", "services.*.build.extra_hosts.*", "services.*.build.extra_hosts.[]",
	"services.*.build.no_cache", "services.*.build.pull",
)

func paths(ps ...string) []tree.Path {
	out := make([]tree.Path, len(ps))
	for i, p := range ps {
		out[i] = tree.Path(p)
	}
	return out
}

// translator turns a loaded project into pods.
type translator struct {
	files   Files
	opts    Options
	origin  manifest.Origin
	env     map[string]string
	project *types.Project
	// refs made the included files' paths, which rel takes back.
	refs *bundleFiles
	// fileBytes and fileItems are the bytes and files the project's pods
	// mount so far, replicas counted: bounded by project.MaxBytes and
	// MaxFileItems. read holds each project path read as files, so a
	// path mounted twice is read and hashed once.
	fileBytes, fileItems int
	read                 map[string]*manifest.Files
	// linkAliases are the aliases other services' links give a service,
	// by service and network key (links).
	linkAliases map[string]map[string][]string
}

// Bounds of the files a project mounts: files volumes of one service,
// and files of the project's pods together (replicas counted).
const (
	MaxFileVolumes = 64
	MaxFileItems   = 20000
)

// projectReason says why a project-level key is refused.
func projectReason(parts []string) string {
	if len(parts) == 3 && parts[0] == "volumes" && parts[2] == "driver_opts" {
		// type: nfs, o: bind, device: /any/folder: a mount the engine
		// makes on the host, outside hostPathAllow.
		return "a volume with driver options is a mount the engine makes on the host (an NFS share, a bind of any host folder), outside hostPathAllow: make the volume yourself and declare it external (listed in the host's policy.externalVolumes)"
	}
	return "not supported by hostlet yet"
}

// pods translates every active service; findings are the attributes
// hostlet does not apply.
func (t *translator) pods(findings []loader.UnsupportedAttribute) ([]manifest.Sourced, error) {
	refused := map[string][]*manifest.Error{}
	var projectErrs []error
	for _, f := range findings {
		parts := f.Path.Parts()
		if len(parts) >= 3 && parts[0] == "services" {
			svc := parts[1]
			if _, active := t.project.Services[svc]; active {
				refused[svc] = append(refused[svc], t.errorf(f.Path.String(), "not supported by hostlet yet"))
			}
			continue
		}
		projectErrs = append(projectErrs, t.errorf(f.Path.String(), "%s", projectReason(parts)))
	}
	for _, key := range slices.Sorted(maps.Keys(t.project.Volumes)) {
		if d := t.project.Volumes[key].Driver; d != "" && d != "local" {
			projectErrs = append(projectErrs, t.errorf("volumes."+key+".driver", "%q is not supported (local)", d))
		}
	}
	for _, key := range slices.Sorted(maps.Keys(t.project.Networks)) {
		if d := t.project.Networks[key].Driver; d != "" && d != "bridge" {
			projectErrs = append(projectErrs, t.errorf("networks."+key+".driver", "%q is not supported (bridge)", d))
		}
	}
	if len(projectErrs) > 0 {
		// Every error at once: the services' refusals too.
		for _, svc := range slices.Sorted(maps.Keys(refused)) {
			for _, e := range refused[svc] {
				projectErrs = append(projectErrs, e)
			}
		}
		return nil, &multierror.Error{Errors: projectErrs}
	}
	t.links(refused)
	names := make([]string, 0, len(t.project.Services))
	total := 0
	for n, s := range t.project.Services {
		names = append(names, n)
		total += min(max(s.GetScale(), 1), MaxReplicas)
	}
	if total > MaxPods {
		return nil, &multierror.Error{Errors: []error{t.errorf("services", "%d pods (services times replicas) are over the limit of %d for one project", total, MaxPods)}}
	}
	sort.Strings(names)
	var out []manifest.Sourced
	for _, n := range names {
		out = append(out, t.service(n, t.project.Services[n], refused[n], len(out))...)
	}
	return out, nil
}

// links turns every active service's links into aliases of the linked
// service on the networks the two share (docker compose resolves a link's
// alias from the linking container only; here every container of those
// networks resolves it, which a project's own network makes the same
// services): "db" adds nothing (the service's name resolves already),
// "db:database" adds database. Refused on the linking service, in
// refused: a link to a service that shares no network with it, an alias
// that is no DNS label, and one that another service of a shared network
// already answers to (its name or alias, or another link's alias for
// another service): one name, one service.
func (t *translator) links(refused map[string][]*manifest.Error) {
	t.linkAliases = map[string]map[string][]string{}
	// owner[network][name] is the service a name resolves to there, in
	// lower case (the engine's DNS ignores it); aliases[service][network]
	// counts the names a service answers to there.
	owner := map[string]map[string]string{}
	aliases := map[string]map[string]int{}
	for name, s := range t.project.Services {
		aliases[name] = map[string]int{}
		for n, sc := range s.Networks {
			if owner[n] == nil {
				owner[n] = map[string]string{}
			}
			owner[n][strings.ToLower(name)] = name
			aliases[name][n] = 1
			if sc != nil {
				for _, a := range sc.Aliases {
					owner[n][strings.ToLower(a)] = name
					aliases[name][n]++
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(t.project.Services)) {
		for i, l := range t.project.Services[name].Links {
			if msg := t.link(owner, aliases, name, l); msg != "" {
				refused[name] = append(refused[name], t.errorf(fmt.Sprintf("services.%s.links[%d]", name, i), "%s", msg))
			}
		}
	}
}

// link records link l of service name (links), or says why it is refused.
func (t *translator) link(owner map[string]map[string]string, aliases map[string]map[string]int, name, l string) string {
	target, alias, _ := strings.Cut(l, ":")
	s := t.project.Services[name]
	other, ok := t.project.Services[target]
	switch {
	case !ok:
		return fmt.Sprintf("service %s is not in the project or not in an active profile", target)
	case alias != "" && alias != target && !manifest.IsDNSLabel(alias):
		return fmt.Sprintf("alias %q is not a DNS label (lowercase letters, digits and '-')", alias)
	}
	var shared []string
	for _, n := range s.NetworksByPriority() {
		if _, on := other.Networks[n]; on && s.NetworkMode == "" && other.NetworkMode == "" {
			shared = append(shared, n)
		}
	}
	if len(shared) == 0 {
		return fmt.Sprintf("service %s shares no network with %s: a link is an alias on a network both join", target, name)
	}
	if alias == "" || alias == target {
		return ""
	}
	for _, n := range shared {
		o, taken := owner[n][alias]
		switch {
		case taken && o != target:
			return fmt.Sprintf("alias %q is already service %s's name on network %s: one name, one service", alias, o, n)
		case !taken && aliases[target][n] >= MaxAliases:
			return fmt.Sprintf("service %s has %d names on network %s already, the most a pod may have", target, MaxAliases, n)
		}
	}
	for _, n := range shared {
		if _, taken := owner[n][alias]; !taken {
			aliases[target][n]++
		}
		owner[n][alias] = target
		if t.linkAliases[target] == nil {
			t.linkAliases[target] = map[string][]string{}
		}
		if !slices.Contains(t.linkAliases[target][n], alias) {
			t.linkAliases[target][n] = append(t.linkAliases[target][n], alias)
		}
	}
	return ""
}

// MaxAliases is the most names a pod may have on a network, as validation
// bounds them (validate.MaxAliases): a link adds none past it.
const MaxAliases = 16

// linked reports whether service s links to service name.
func linked(s types.ServiceConfig, name string) bool {
	return slices.ContainsFunc(s.Links, func(l string) bool {
		target, _, _ := strings.Cut(l, ":")
		return target == name
	})
}

func (t *translator) errorf(field, format string, args ...any) *manifest.Error {
	return manifest.Errorf(t.origin, "", field, format, args...)
}

// homePath reports whether p is a path from a home folder: ~ or ~user
// first, or, in an included file (made relative to its folder), after it.
func homePath(p string) bool {
	if path.IsAbs(p) {
		return false
	}
	for _, el := range strings.Split(p, "/") {
		if strings.HasPrefix(el, "~") {
			return true
		}
	}
	return false
}

// rel is p as a path of the project (an included file's paths are made
// absolute in the loader's view of the project).
func (t *translator) rel(p string) string {
	if t.refs == nil {
		return p
	}
	return t.refs.rel(p)
}

// PodID is the pod id of a service's replica (0 when the service has one):
// <project>-<service>[-<i>], lower case, '_' mapped to '-'.
func PodID(project, service string, replica int) string {
	id := strings.ToLower(project + "-" + service)
	id = strings.ReplaceAll(id, "_", "-")
	if replica > 0 {
		id += "-" + strconv.Itoa(replica)
	}
	return id
}

// containerName is the service name as a DNS label.
func containerName(service string) string {
	n := strings.ToLower(service)
	n = strings.NewReplacer("_", "-", ".", "-").Replace(n)
	return strings.Trim(n, "-")
}

// service translates one service into its pods (one per replica).
func (t *translator) service(name string, s types.ServiceConfig, refused []*manifest.Error, index int) []manifest.Sourced {
	c := &serviceConv{t: t, name: name, field: "services." + name, errs: refused}
	replicas := s.GetScale()
	if s.Deploy != nil {
		switch s.Deploy.Mode {
		case "", "replicated":
		case "global":
			// One per node, as in docker compose: a host is one node.
			if replicas > 1 {
				c.note("deploy.mode", "global: one pod on a host (one per node), not the replicas given")
			}
			replicas = 1
		default:
			c.add("deploy.mode", "%q: jobs are not supported yet (replicated or global)", s.Deploy.Mode)
		}
	}
	switch {
	case replicas < 0:
		c.add("deploy.replicas", "%d is negative", replicas)
		replicas = 1
	case replicas > MaxReplicas:
		c.add("deploy.replicas", "%d is over the limit of %d", replicas, MaxReplicas)
		replicas = 1
	}
	c.replicas = max(replicas, 1)
	if s.ContainerName != "" && c.replicas > 1 {
		c.add("container_name", "%q names one container, and the service has %d replicas (docker compose refuses it too): remove one or the other", s.ContainerName, c.replicas)
	}
	bytes, items := t.fileBytes, t.fileItems
	m := c.manifest(s)
	if len(c.errs) > len(refused) {
		// A refused service mounts nothing: its files count for no
		// other service.
		t.fileBytes, t.fileItems = bytes, items
	}
	var out []manifest.Sourced
	for i := 1; i <= replicas; i++ {
		r := m.Clone()
		n := 0
		if replicas > 1 {
			n = i
		}
		r.ID = PodID(t.project.Name, name, n)
		r.Labels[LabelContainerNumber] = strconv.Itoa(i)
		o := t.origin
		o.Index = index + i - 1
		out = append(out, manifest.Sourced{Origin: o, Manifest: r, Errors: atOrigin(c.errs, o), Keys: c.keys, Notes: atOrigin(c.notes, o)})
	}
	return out
}

// atOrigin are copies of errs at origin o (a replica's); nil for none.
func atOrigin(errs []*manifest.Error, o manifest.Origin) []*manifest.Error {
	if len(errs) == 0 {
		return nil
	}
	out := make([]*manifest.Error, len(errs))
	for j, e := range errs {
		e := *e
		e.Origin = o
		out[j] = &e
	}
	return out
}

// serviceConv collects one service's translation and its errors.
type serviceConv struct {
	t     *translator
	name  string
	field string
	errs  []*manifest.Error
	// notes are the service's manifest.Sourced.Notes.
	notes []*manifest.Error
	// replicas are the service's pods (at least 1), fileVolumes its
	// files volumes so far.
	replicas, fileVolumes int
	// keys name the pod's fields by the service's keys, for validation's
	// errors (manifest.Sourced.Keys).
	keys map[string]string
}

// serviceKeys are the pod's fields that one key of a service makes.
var serviceKeys = map[string]string{
	"containers[0].image": "image", "containers[0].command": "entrypoint", "containers[0].args": "command",
	"containers[0].workingDir": "working_dir", "containers[0].env": "environment", "containers[0].ports": "ports",
	"containers[0].memory": "mem_limit", "containers[0].cpu": "cpu_shares", "containers[0].cpuLimit": "cpus", "containers[0].pidsLimit": "pids_limit",
	"containers[0].healthcheck": "healthcheck", "containers[0].user": "user", "containers[0].groupAdd": "group_add", "containers[0].runtime": "runtime", "containers[0].readOnly": "read_only",
	"containers[0].init": "init", "containers[0].stopSignal": "stop_signal", "containers[0].shmSize": "shm_size", "containers[0].tty": "tty", "containers[0].stdinOpen": "stdin_open",
	"containers[0].containerName": "container_name", "containers[0].platform": "platform", "containers[0].imagePullPolicy": "pull_policy", "containers[0].imagePolicy": ImagePolicyKey, "containers[0].volumeMounts": "volumes",
	"containers[0].privileged": "privileged", "containers[0].capAdd": "cap_add", "containers[0].capDrop": "cap_drop",
	"containers[0].devices": "devices", "containers[0].securityOpt": "security_opt", "containers[0].ulimits": "ulimits",
	"containers[0].sysctls": "sysctls", "containers[0].logging": "logging",
	"hostNetwork": "network_mode", "networkOf": "network_mode", "hostPID": "pid", "hostIPC": "ipc", "hostname": "hostname", "domainname": "domainname", "extraHosts": "extra_hosts",
	"dns": "dns", "dnsSearch": "dns_search", "dependsOn": "depends_on", "restartPolicy": "restart",
	"terminationGracePeriodSeconds": "stop_grace_period", "labels": "labels", "volumes": "volumes", "networks": "networks",
}

// key records that the pod's field is the service's key.
func (c *serviceConv) key(field, key string) {
	c.keys[field] = c.field + "." + key
}

func (c *serviceConv) add(key, format string, args ...any) {
	c.errs = append(c.errs, c.t.errorf(c.field+"."+key, format, args...))
}

// note records what the translation did at key that the author may not
// expect (manifest.Sourced.Notes).
func (c *serviceConv) note(key, format string, args ...any) {
	c.notes = append(c.notes, c.t.errorf(c.field+"."+key, format, args...))
}

func (c *serviceConv) manifest(s types.ServiceConfig) manifest.Manifest {
	c.keys = map[string]string{}
	for f, k := range serviceKeys {
		c.keys[f] = c.field + "." + k
	}
	ct := manifest.Container{
		Name:          containerName(c.name),
		ContainerName: s.ContainerName,
		Platform:      s.Platform,
		Image:         s.Image,
		Command:       []string(s.Entrypoint),
		Args:          []string(s.Command),
		WorkingDir:    s.WorkingDir,
		CPU:           s.CPUShares,
	}
	if s.Image == "" && s.Build == nil {
		c.add("image", "required")
	}
	ct.ImagePullPolicy = c.pullPolicy(s.PullPolicy)
	ct.ImagePolicy = c.imagePolicy(s.Extensions[ImagePolicyKey])
	ct.Env = c.environment(s)
	ct.Ports = c.ports(s)
	ct.Memory = c.memory(s)
	ct.User, ct.ReadOnly, ct.StopSignal, ct.ShmSize = s.User, s.ReadOnly, s.StopSignal, int64(s.ShmSize)
	ct.TTY, ct.StdinOpen = s.Tty, s.StdinOpen
	ct.GroupAdd, ct.Runtime = s.GroupAdd, s.Runtime
	ct.Init = s.Init != nil && *s.Init
	ct.CPULimit = c.cpuLimit(s)
	ct.PidsLimit = pidsLimit(s)
	ct.Healthcheck = c.healthcheck(s.HealthCheck)
	c.build(&ct, s)
	m := manifest.Manifest{
		Version:                       manifest.Version,
		RestartPolicy:                 c.restart(s.Restart),
		TerminationGracePeriodSeconds: c.grace(s.StopGracePeriod),
		Labels:                        c.labels(s.Labels),
	}
	m.Volumes, ct.VolumeMounts = c.volumes(s.Volumes)
	ct.Tmpfs = c.tmpfs(s)
	c.fileObjects(&m, &ct, s)
	distinctSources(m.Volumes, ct.VolumeMounts)
	m.Networks = c.networks(s)
	c.hostAccess(&m, &ct, s)
	m.DependsOn = c.dependsOn(s)
	c.updateConfig(&m, s.Deploy)
	m.Hostname, m.Domainname, m.DNS, m.DNSSearch = s.Hostname, s.DomainName, []string(s.DNS), []string(s.DNSSearch)
	for _, host := range slices.Sorted(maps.Keys(s.ExtraHosts)) {
		for _, ip := range s.ExtraHosts[host] {
			m.ExtraHosts = append(m.ExtraHosts, host+":"+ip)
		}
	}
	m.Containers = []manifest.Container{ct}
	return m
}

// ImagePolicyKey is a service's key for the policy of `hostlet images`
// (an x- key: docker compose passes over it).
const ImagePolicyKey = "x-hostlet-image-policy"

// imagePolicy reads the service's x-hostlet-image-policy, strictly: a
// key it does not know is an error, as in a native manifest.
func (c *serviceConv) imagePolicy(v any) *manifest.ImagePolicy {
	if v == nil {
		return nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		c.add(ImagePolicyKey, "%v", err)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p manifest.ImagePolicy
	if err := dec.Decode(&p); err != nil {
		c.add(ImagePolicyKey, "not a policy (semver, filter, allowPrerelease, pin): %v", err)
		return nil
	}
	return &p
}

func (c *serviceConv) pullPolicy(p string) string {
	switch p {
	case "", types.PullPolicyMissing, types.PullPolicyIfNotPresent:
		return manifest.PullIfNotPresent
	case types.PullPolicyAlways:
		return manifest.PullAlways
	case types.PullPolicyNever:
		return manifest.PullNever
	case types.PullPolicyBuild:
		// The image is built (build:), never pulled.
		return manifest.PullNever
	default:
		c.add("pull_policy", "%q is not supported (always, never, missing or if_not_present)", p)
	}
	return ""
}

// restart maps Compose's restart onto the pod's policy; Compose's default
// is no.
func (c *serviceConv) restart(r string) string {
	switch {
	case r == "" || r == types.RestartPolicyNo:
		return manifest.RestartNever
	case r == types.RestartPolicyAlways || r == types.RestartPolicyUnlessStopped:
		return manifest.RestartAlways
	case r == types.RestartPolicyOnFailure:
		return manifest.RestartOnFailure
	case strings.HasPrefix(r, types.RestartPolicyOnFailure+":"):
		c.add("restart", "%q: a retry limit is not supported (hostlet retries with a backoff); use on-failure", r)
		return manifest.RestartOnFailure
	}
	c.add("restart", "%q is not one of no, always, on-failure, unless-stopped", r)
	return ""
}

// updateConfig maps deploy.update_config onto the pod's update settings:
// monitor (how long a new version is watched) is minReadySeconds, and
// failure_action is the rollback policy (rollback: Auto, pause: Hold,
// continue: Never). Unset, the pod's defaults apply (Auto, 10 s).
func (c *serviceConv) updateConfig(m *manifest.Manifest, d *types.DeployConfig) {
	if d == nil || d.UpdateConfig == nil {
		return
	}
	u := d.UpdateConfig
	switch u.FailureAction {
	case "":
	case "rollback":
		m.Rollback = manifest.RollbackAuto
	case "pause":
		m.Rollback = manifest.RollbackHold
	case "continue":
		m.Rollback = manifest.RollbackNever
	default:
		c.add("deploy.update_config.failure_action", "%q is not one of rollback, pause, continue", u.FailureAction)
	}
	if mon := time.Duration(u.Monitor); mon != 0 {
		secs := math.Ceil(mon.Seconds())
		switch {
		case mon < 0:
			c.add("deploy.update_config.monitor", "%s is negative", mon)
		case secs > manifest.MaxSeconds:
			c.add("deploy.update_config.monitor", "%s is over the limit of %d seconds", mon, manifest.MaxSeconds)
		default:
			m.MinReadySeconds = int64(secs)
		}
	}
}

func (c *serviceConv) grace(d *types.Duration) int64 {
	if d == nil {
		return 0
	}
	if *d < 0 {
		c.add("stop_grace_period", "%s is negative", time.Duration(*d))
		return 0
	}
	secs := math.Ceil(time.Duration(*d).Seconds())
	if secs > manifest.MaxSeconds {
		c.add("stop_grace_period", "%s is over the limit of %d seconds", time.Duration(*d), manifest.MaxSeconds)
		return 0
	}
	if secs == 0 {
		// 0 would mean the default (10 s) to a pod; Compose means at once.
		secs = 1
	}
	return int64(secs)
}

// dependsOn maps depends_on onto the pod's dependencies: every replica of
// the service depended on, in its condition (service_started, _healthy,
// _completed_successfully). A dependency on a healthy service needs a
// healthcheck there.
func (c *serviceConv) dependsOn(s types.ServiceConfig) []manifest.Dependency {
	var out []manifest.Dependency
	for _, name := range slices.Sorted(maps.Keys(s.DependsOn)) {
		d := s.DependsOn[name]
		key := "depends_on." + name
		dep, ok := c.t.project.Services[name]
		switch {
		case !ok && !d.Required:
			// Compose starts the service without it, saying so.
			c.note(key, "service %s is not in the project or not in an active profile, and the dependency is optional (required: false): left out, as Compose does", name)
			continue
		case !ok:
			c.add(key, "service %s is not in the project or not in an active profile", name)
			continue
		}
		switch {
		case d.Restart && s.NetworkMode == types.ServicePrefix+name && d.Condition == types.ServiceConditionStarted:
			// What compose-go makes of network_mode: service:NAME. hostlet
			// moves the service into NAME's namespace whenever NAME's
			// container is replaced or restarts (networkOf).
		case d.Restart && linked(s, name) && d.Condition == types.ServiceConditionStarted:
			// What compose-go makes of a link: a dependency that restarts
			// the service with it, which hostlet does not do.
			c.note(key, "made by links: the service waits for %s to start, and is not restarted when %s restarts", name, name)
		case d.Restart:
			c.add(key+".restart", "restarting a service when its dependency restarts is not supported yet")
		}
		if !d.Required {
			c.add(key+".required", "an optional dependency on a service of the project is not supported yet (hostlet would wait for it all the same)")
		}
		var cond string
		switch d.Condition {
		case "", types.ServiceConditionStarted:
			cond = manifest.DependencyStarted
		case types.ServiceConditionHealthy:
			cond = manifest.DependencyHealthy
			switch {
			case dep.HealthCheck == nil:
				// Its image may have one (a HEALTHCHECK), as Compose waits
				// for; an image without one is healthy once running.
				c.note(key+".condition", "service %s sets no healthcheck: its image's HEALTHCHECK is waited for, and without one it counts as healthy once it runs", name)
			case dep.HealthCheck.Disable:
				c.add(key+".condition", "service %s has its healthcheck disabled: nothing to be healthy by", name)
			}
		case types.ServiceConditionCompletedSuccessfully:
			cond = manifest.DependencyCompleted
		default:
			c.add(key+".condition", "%q is not one of service_started, service_healthy, service_completed_successfully", d.Condition)
			continue
		}
		replicas := min(max(dep.GetScale(), 1), MaxReplicas)
		for i := 1; i <= replicas; i++ {
			n := 0
			if replicas > 1 {
				n = i
			}
			out = append(out, manifest.Dependency{Pod: PodID(c.t.project.Name, name, n), Condition: cond})
		}
	}
	return out
}

// healthcheck maps Compose's healthcheck onto the container's Docker
// healthcheck: test CMD (exec form), CMD-SHELL (a string, run by the
// image's shell) or NONE; durations in whole seconds, rounded up.
func (c *serviceConv) healthcheck(h *types.HealthCheckConfig) *manifest.Healthcheck {
	if h == nil {
		return nil
	}
	out := &manifest.Healthcheck{
		IntervalSeconds: c.healthSeconds("interval", h.Interval), TimeoutSeconds: c.healthSeconds("timeout", h.Timeout),
		StartPeriodSeconds: c.healthSeconds("start_period", h.StartPeriod), Disable: h.Disable,
	}
	if h.Retries != nil {
		out.Retries = int64(min(*h.Retries, uint64(manifest.MaxSeconds)))
	}
	test := []string(h.Test)
	switch {
	case h.Disable || len(test) == 0:
		out.Disable = h.Disable
	case test[0] == "NONE":
		out.Disable = true
	case test[0] == "CMD" && len(test) > 1:
		out.Command = test[1:]
	case test[0] == "CMD-SHELL" && len(test) == 2:
		out.Shell = test[1]
	default:
		c.add("healthcheck.test", "starts with CMD (and a command), CMD-SHELL (and one line) or NONE")
	}
	return out
}

func (c *serviceConv) healthSeconds(key string, d *types.Duration) int64 {
	if d == nil || *d <= 0 {
		return 0
	}
	secs := math.Ceil(time.Duration(*d).Seconds())
	if secs > manifest.MaxSeconds {
		c.add("healthcheck."+key, "%s is over the limit of %d seconds", time.Duration(*d), manifest.MaxSeconds)
		return 0
	}
	return int64(secs)
}

// cpuLimit is cpus (or deploy.resources.limits.cpus) in thousandths of
// a CPU (float32 in compose-go: 0.1 is 0.100000001, so rounded, and never
// to 0 for a limit above 0).
func (c *serviceConv) cpuLimit(s types.ServiceConfig) int64 {
	cpus := float64(s.CPUS)
	if s.Deploy != nil && s.Deploy.Resources.Limits != nil {
		if l := float64(s.Deploy.Resources.Limits.NanoCPUs); l != 0 {
			if cpus != 0 && cpus != l {
				c.add("deploy.resources.limits.cpus", "%g differs from cpus %g: give one", l, cpus)
			}
			cpus = l
		}
	}
	if cpus < 0 || cpus > 1024 {
		c.add("cpus", "%g is not in 0..1024", cpus)
		return 0
	}
	if cpus == 0 {
		return 0
	}
	return max(1, int64(math.Round(cpus*1000)))
}

// pidsLimit is pids_limit, else deploy.resources.limits.pids (the loader
// refuses two values that differ).
func pidsLimit(s types.ServiceConfig) int64 {
	if s.PidsLimit == 0 && s.Deploy != nil && s.Deploy.Resources.Limits != nil {
		return s.Deploy.Resources.Limits.Pids
	}
	return s.PidsLimit
}

func (c *serviceConv) memory(s types.ServiceConfig) int64 {
	mem := int64(s.MemLimit)
	if s.Deploy != nil && s.Deploy.Resources.Limits != nil {
		if l := int64(s.Deploy.Resources.Limits.MemoryBytes); l != 0 {
			if mem != 0 && mem != l {
				c.add("deploy.resources.limits.memory", "%d differs from mem_limit %d: give one", l, mem)
			}
			mem = l
		}
	}
	return mem
}

func (c *serviceConv) labels(l types.Labels) map[string]string {
	out := map[string]string{
		LabelProject: c.t.project.Name,
		LabelService: c.name,
		LabelOneoff:  "False",
	}
	for _, k := range slices.Sorted(maps.Keys(l)) { // reasons in one order
		if strings.HasPrefix(k, labelPrefix) {
			c.add("labels."+k, "the prefix %q is Compose's own; hostlet sets these labels", labelPrefix)
			continue
		}
		out[k] = l[k]
	}
	return out
}

// environment is env_file then environment over it, sorted by name.
// Values never appear in an error.
func (c *serviceConv) environment(s types.ServiceConfig) []manifest.EnvVar {
	vars := map[string]string{}
	for i, ef := range s.EnvFiles {
		c.envFile(fmt.Sprintf("env_file[%d]", i), ef, vars)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Environment)) { // reasons in one order
		v := s.Environment[k]
		if v == nil {
			val, ok := c.t.env[k]
			if !ok {
				c.note("environment."+k, "not set in the project's .env or the host config's compose.env: left out of the container's environment, as Compose leaves it out")
				continue
			}
			vars[k] = val
			continue
		}
		vars[k] = *v
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]manifest.EnvVar, 0, len(names))
	for _, k := range names {
		out = append(out, manifest.EnvVar{Name: k, Value: vars[k]})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (c *serviceConv) envFile(key string, ef types.EnvFile, vars map[string]string) {
	ef.Path = c.t.rel(ef.Path)
	if homePath(ef.Path) {
		c.add(key, "%s: a path in a home folder depends on who runs hostlet; give a file of the project", ef.Path)
		return
	}
	name, err := projectPath(ef.Path)
	if err != nil {
		c.add(key, "%s: %v", ef.Path, err)
		return
	}
	data, err := c.t.files.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) && !bool(ef.Required) {
		return
	}
	if err != nil {
		c.add(key, "%s: %v", ef.Path, err)
		return
	}
	format := ef.Format
	got := map[string]string{}
	if err := dotenv.ParseWithFormat(strings.NewReader(string(data)), name, got, lookupIn(c.t.env), format); err != nil {
		c.add(key, "%s: %v", ef.Path, dotenvError(err))
		return
	}
	if n := lineWithoutEquals(data); n > 0 {
		// The parser takes a last line without '=' whole, as a name.
		c.add(key, "%s: line %d: not valid env-file syntax (KEY=VALUE)", ef.Path, n)
		return
	}
	for k, v := range got {
		vars[k] = v
	}
}

// lineWithoutEquals is the number of the first line of an env file that
// holds neither a comment nor KEY=VALUE, or 0.
func lineWithoutEquals(data []byte) int {
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.Contains(line, "=") {
			return i + 1
		}
	}
	return 0
}

// projectPath is a relative path of the project as a Files name.
func projectPath(p string) (string, error) {
	if path.IsAbs(p) {
		return "", errors.New("must be a file of the project (a relative path), not a host path")
	}
	clean := path.Clean(p)
	if !fs.ValidPath(clean) {
		return "", errors.New("leaves the project folder")
	}
	return clean, nil
}

func (c *serviceConv) ports(s types.ServiceConfig) []manifest.Port {
	if len(s.Ports) > MaxPorts {
		c.add("ports", "%d ports (ranges counted port by port) are over the limit of %d", len(s.Ports), MaxPorts)
		return nil
	}
	var out []manifest.Port
	seen := map[string]bool{}
	for i, p := range s.Ports {
		key := fmt.Sprintf("ports[%d]", i)
		proto := strings.ToUpper(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		if proto != "TCP" && proto != "UDP" {
			c.add(key+".protocol", "%q is not supported (tcp or udp)", p.Protocol)
			continue
		}
		if p.Published == "" {
			// Published on a host port the engine picks, as Compose does.
			seen[fmt.Sprintf("%d/%s", p.Target, proto)] = true
			c.key(fmt.Sprintf("containers[0].ports[%d]", len(out)), key)
			out = append(out, manifest.Port{Name: p.Name, ContainerPort: int(p.Target), Protocol: proto, HostIP: p.HostIP, RandomHostPort: true})
			continue
		}
		host, err := strconv.Atoi(p.Published)
		if err != nil || host < 1 || host > 65535 {
			c.add(key+".published", "%q is not one host port in 1..65535 (a range for one container port is not supported)", p.Published)
			continue
		}
		seen[fmt.Sprintf("%d/%s", p.Target, proto)] = true
		c.key(fmt.Sprintf("containers[0].ports[%d]", len(out)), key)
		out = append(out, manifest.Port{Name: p.Name, ContainerPort: int(p.Target), HostPort: host, Protocol: proto, HostIP: p.HostIP})
	}
	for i, e := range s.Expose {
		port, proto, _ := strings.Cut(e, "/")
		proto = strings.ToUpper(proto)
		if proto == "" {
			proto = "TCP"
		}
		first, last, err := portRange(port)
		if err != nil || (proto != "TCP" && proto != "UDP") {
			c.add(fmt.Sprintf("expose[%d]", i), "%q is not a port, a port range or port/protocol (tcp or udp)", e)
			continue
		}
		if len(out)+last-first >= MaxPorts {
			c.add(fmt.Sprintf("expose[%d]", i), "the ports are over the limit of %d", MaxPorts)
			break
		}
		for n := first; n <= last; n++ {
			if k := fmt.Sprintf("%d/%s", n, proto); !seen[k] {
				seen[k] = true
				c.key(fmt.Sprintf("containers[0].ports[%d]", len(out)), fmt.Sprintf("expose[%d]", i))
				out = append(out, manifest.Port{ContainerPort: n, Protocol: proto})
			}
		}
	}
	return out
}

// portRange parses "3000" or "3000-3005".
func portRange(s string) (int, int, error) {
	a, b, isRange := strings.Cut(s, "-")
	first, err := strconv.Atoi(a)
	if err != nil || first < 1 || first > 65535 {
		return 0, 0, errors.New("not a port")
	}
	if !isRange {
		return first, first, nil
	}
	last, err := strconv.Atoi(b)
	if err != nil || last < first || last > 65535 || last-first > 1000 {
		return 0, 0, errors.New("not a port range")
	}
	return first, last, nil
}

// volumes maps bind mounts of absolute host paths onto hostPath volumes;
// the host config's hostPathAllow applies to them as to any pod's.
func (c *serviceConv) volumes(vs []types.ServiceVolumeConfig) ([]manifest.Volume, []manifest.VolumeMount) {
	var (
		vols   []manifest.Volume
		mounts []manifest.VolumeMount
	)
	for i, v := range vs {
		key := fmt.Sprintf("volumes[%d]", i)
		if v.Type == types.VolumeTypeBind {
			v.Source = c.t.rel(v.Source)
		}
		switch {
		case v.Type == types.VolumeTypeVolume:
			if vol, ok := c.namedVolume(key, i, v); ok {
				c.volumeKey(len(vols), key)
				vols = append(vols, vol)
				mounts = append(mounts, manifest.VolumeMount{Name: vol.Name, MountPath: v.Target, ReadOnly: v.ReadOnly, SELinuxRelabel: relabel(v)})
			}
			continue
		case v.Type == types.VolumeTypeTmpfs:
			continue // a tmpfs of the container (tmpfs)
		case v.Type != types.VolumeTypeBind:
			c.add(key, "%s volumes are not supported yet (bind mounts of absolute host paths are)", v.Type)
			continue
		case strings.HasPrefix(v.Source, "~"):
			// Expanded, a host path like any other (after the switch).
			home, ok := c.homeSource(key+".source", v.Source)
			if !ok {
				continue
			}
			v.Source = home
		case homePath(v.Source):
			c.add(key+".source", "%s: a path in a home folder depends on who runs hostlet; give the absolute host path", v.Source)
			continue
		case !path.IsAbs(v.Source):
			if vol, ok := c.dataFolder(key, v); ok {
				if vol.DataFolder != "" {
					vol.Name = fmt.Sprintf("bind-%d", i)
					c.volumeKey(len(vols), key)
					vols = append(vols, vol)
					mounts = append(mounts, manifest.VolumeMount{Name: vol.Name, MountPath: v.Target, ReadOnly: v.ReadOnly, SELinuxRelabel: relabel(v)})
				}
				continue
			}
			// A file or folder of the project: mounted read-only, as it is
			// at the source's revision.
			if f, ok := c.projectFiles(key+".source", v.Source, false); ok {
				name := fmt.Sprintf("bind-%d", i)
				c.volumeKey(len(vols), key)
				vols = append(vols, manifest.Volume{Name: name, Files: f})
				mounts = append(mounts, manifest.VolumeMount{Name: name, MountPath: v.Target, ReadOnly: true, SELinuxRelabel: relabel(v)})
			}
			continue
		}
		name := fmt.Sprintf("bind-%d", i)
		c.volumeKey(len(vols), key)
		vols = append(vols, manifest.Volume{Name: name, HostPath: v.Source})
		mounts = append(mounts, manifest.VolumeMount{Name: name, MountPath: v.Target, ReadOnly: v.ReadOnly, SELinuxRelabel: relabel(v)})
	}
	return vols, mounts
}

// homeSource is bind source p (~ or ~/...) as a host path: under the
// home folder the host's compose.home names (by default the home of the
// user hostlet runs as, as Compose takes the home of whoever runs it).
// Another user's home (~user) is refused, as is ~ where the host's home
// is not known (hostlet publish without compose.home).
func (c *serviceConv) homeSource(key, p string) (string, bool) {
	rest := strings.TrimPrefix(p, "~")
	switch {
	case rest != "" && !strings.HasPrefix(rest, "/"):
		c.add(key, "%s: only ~ (the home of the user hostlet runs as) is expanded, not another user's home: give the absolute host path", p)
		return "", false
	case c.t.opts.Home == "":
		c.add(key, "%s: ~ is the home of the user hostlet runs as on the host, which is not known here: set compose.home in the host config", p)
		return "", false
	case c.t.opts.HomeIsGuess:
		c.note(key, "~ is %s here, the home of the user running this command; the host's hostlet takes compose.home, else its own user's home (set compose.home to know)", c.t.opts.Home)
	}
	return path.Join(c.t.opts.Home, rest), true
}

// relabel is the SELinux relabelling a volume entry asks for (:z, :Z),
// or "".
func relabel(v types.ServiceVolumeConfig) string {
	if v.Bind == nil {
		return ""
	}
	return v.Bind.SELinux
}

// tmpfs are the service's tmpfs mounts: its tmpfs list ("path" or
// "path:options", options of size, mode and exec among those the engine
// sets anyway), then its volumes of type tmpfs (tmpfs.size, tmpfs.mode).
func (c *serviceConv) tmpfs(s types.ServiceConfig) []manifest.Tmpfs {
	var out []manifest.Tmpfs
	for i, entry := range s.Tmpfs {
		key := fmt.Sprintf("tmpfs[%d]", i)
		target, opts, _ := strings.Cut(entry, ":")
		t := manifest.Tmpfs{MountPath: target}
		if !c.tmpfsOptions(key, opts, &t) {
			continue
		}
		c.key(fmt.Sprintf("containers[0].tmpfs[%d]", len(out)), key)
		out = append(out, t)
	}
	for i, v := range s.Volumes {
		if v.Type != types.VolumeTypeTmpfs {
			continue
		}
		key := fmt.Sprintf("volumes[%d]", i)
		if v.ReadOnly {
			c.add(key+".read_only", "a read-only tmpfs is always empty: leave read_only out")
			continue
		}
		t := manifest.Tmpfs{MountPath: v.Target}
		if v.Tmpfs != nil {
			t.SizeBytes, t.Mode = int64(v.Tmpfs.Size), v.Tmpfs.Mode
		}
		c.key(fmt.Sprintf("containers[0].tmpfs[%d]", len(out)), key)
		out = append(out, t)
	}
	return out
}

// tmpfsOptions sets t from the options of a short tmpfs entry, reporting
// whether they are all understood.
func (c *serviceConv) tmpfsOptions(key, opts string, t *manifest.Tmpfs) bool {
	if opts == "" {
		return true
	}
	ok := true
	for _, o := range strings.Split(opts, ",") {
		name, val, withValue := strings.Cut(o, "=")
		if withValue != (name == "size" || name == "mode") {
			c.add(key, "option %q is not supported (size=..., mode=..., exec, noexec, nosuid, nodev, rw)", o)
			ok = false
			continue
		}
		switch name {
		case "size":
			n, err := units.RAMInBytes(val)
			if err != nil || n < 0 {
				c.add(key, "size %q is not a size (16m, 1g, ...)", val)
				ok = false
			}
			t.SizeBytes = n
		case "mode":
			m, err := strconv.ParseUint(val, 8, 32)
			if err != nil || m > 0o7777 {
				c.add(key, "mode %q is not octal permission bits (1777, 0750, ...)", val)
				ok = false
			}
			t.Mode = uint32(m)
		case "exec":
			t.Exec = true
		case "noexec":
			t.Exec = false
		case "rw", "nosuid", "nodev":
			// The engine mounts a tmpfs so anyway.
		default:
			c.add(key, "option %q is not supported (size, mode, exec, noexec, nosuid, nodev, rw)", o)
			ok = false
		}
	}
	return ok
}

// volumeKey records that the pod's volume i (and its mount, made with
// it) is the service's key (volumes[2], configs[0], ...).
func (c *serviceConv) volumeKey(i int, key string) {
	c.key(fmt.Sprintf("volumes[%d]", i), key)
	c.key(fmt.Sprintf("containers[0].volumeMounts[%d]", i), key)
}

// projectFiles reads the file or folder src of the project as a files
// volume: one file, or every file below the folder (names in the folder,
// modes from the source: executable or not). It counts against the
// project's bounds as it reads, so no Compose file makes it read or hash
// more than they allow.
func (c *serviceConv) projectFiles(key, src string, secret bool) (*manifest.Files, bool) {
	if src == "" {
		c.add(key, "empty: name a file or folder of the project (./conf)")
		return nil, false
	}
	src = c.t.rel(src)
	name, err := projectPath(src)
	if err != nil {
		c.add(key, "%s: %v", src, err)
		return nil, false
	}
	if !c.useFileVolume(key) {
		return nil, false
	}
	if f, ok := c.t.read[name]; ok {
		if !c.account(key, src, len(f.Items), f.Size()) {
			return nil, false
		}
		if f.Secret != secret {
			f = manifest.NewFiles(f.Source, secret, f.Items)
		}
		return f, true
	}
	files := c.t.files
	data, err := files.ReadFile(name)
	switch {
	case err == nil:
		if !c.account(key, src, 1, len(data)) {
			return nil, false
		}
		return c.t.remember(name, manifest.NewFiles(name, secret, []manifest.FileItem{{Data: data, Mode: fileMode(files, name)}})), true
	case !errors.Is(err, fs.ErrNotExist):
		c.add(key, "%s: %v", src, err)
		return nil, false
	}
	if _, body := files.(noFiles); body {
		c.add(key, "%s: %v", src, err)
		return nil, false
	}
	prefix := name + "/"
	if name == "." {
		prefix = ""
	}
	var items []manifest.FileItem
	size := 0
	for _, n := range files.Names() {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		if len(items) == manifest.MaxFileItems {
			c.add(key, "%s: more than %d files", src, manifest.MaxFileItems)
			return nil, false
		}
		data, err := files.ReadFile(n)
		if err != nil {
			c.add(key, "%s: %v", src, err)
			return nil, false
		}
		if size += len(data); size > manifest.MaxFileBytes {
			c.add(key, "%s: its files hold more than %d bytes", src, manifest.MaxFileBytes)
			return nil, false
		}
		items = append(items, manifest.FileItem{Path: strings.TrimPrefix(n, prefix), Data: data, Mode: fileMode(files, n)})
	}
	if len(items) == 0 {
		c.add(key, "%s is not a file or folder of the project at this revision (a project file is mounted read-only, as it is in the source; for data the service writes, use a named volume)", src)
		return nil, false
	}
	if !c.account(key, src, len(items), size) {
		return nil, false
	}
	return c.t.remember(name, manifest.NewFiles(name, secret, items)), true
}

// remember keeps the files read from project path name.
func (t *translator) remember(name string, f *manifest.Files) *manifest.Files {
	if t.read == nil {
		t.read = map[string]*manifest.Files{}
	}
	t.read[name] = f
	return f
}

// useFileVolume counts one more files volume of the service.
func (c *serviceConv) useFileVolume(key string) bool {
	if c.fileVolumes++; c.fileVolumes > MaxFileVolumes {
		if c.fileVolumes == MaxFileVolumes+1 {
			c.add(key, "more than %d files volumes (bind mounts of project files, configs, secrets) in one service", MaxFileVolumes)
		}
		return false
	}
	return true
}

// account counts files of size bytes mounted by every replica of the
// service against the project's bounds; false (and an error) when they
// would be over.
func (c *serviceConv) account(key, what string, files, size int) bool {
	t := c.t
	if size > manifest.MaxFileBytes {
		c.add(key, "%s: more than %d bytes", what, manifest.MaxFileBytes)
		return false
	}
	if t.fileBytes+size*c.replicas > project.MaxBytes || t.fileItems+files*c.replicas > MaxFileItems {
		c.add(key, "%s: the project's pods would mount more than %d bytes or %d files (replicas counted)", what, project.MaxBytes, MaxFileItems)
		return false
	}
	t.fileBytes += size * c.replicas
	t.fileItems += files * c.replicas
	return true
}

func fileMode(files Files, name string) uint32 {
	if files.Executable(name) {
		return manifest.FileModeExe
	}
	return 0
}

// distinctSources names each files volume of a pod apart: a later one
// whose Source is an earlier one's (a project file named like a content
// config, "config app") is named by its mount path too.
func distinctSources(vols []manifest.Volume, mounts []manifest.VolumeMount) {
	seen := map[string]string{} // source -> digest
	for i, v := range vols {
		if v.Files == nil {
			continue
		}
		f := v.Files
		if d, taken := seen[f.Source]; taken && d != f.Digest() {
			at := ""
			for _, vm := range mounts {
				if vm.Name == v.Name {
					at = vm.MountPath
				}
			}
			f = manifest.NewFiles(f.Source+" at "+at, f.Secret, f.Items)
			vols[i].Files = f
		}
		seen[f.Source] = f.Digest()
	}
}

// valueFiles is one file holding value (a content or a variable's),
// counted against the project's bounds; nil when over them.
func (c *serviceConv) valueFiles(key, source string, secret bool, value string) *manifest.Files {
	if !c.useFileVolume(key) || !c.account(key, source, 1, len(value)) {
		return nil
	}
	return manifest.NewFiles(source, secret, []manifest.FileItem{{Data: []byte(value)}})
}

// fileTarget is where a config or secret is mounted: target, or
// /<source> (configs) and /run/secrets/<source> (secrets), a relative
// target taken from / or /run/secrets; never / itself, and a secret's
// relative target never out of /run/secrets.
func fileTarget(ref types.FileReferenceConfig, secret bool) (string, error) {
	base := "/"
	if secret {
		base = "/run/secrets"
	}
	target := ref.Target
	if target == "" {
		target = ref.Source
	}
	if !path.IsAbs(target) {
		joined := path.Join(base, target)
		if secret && !strings.HasPrefix(joined, base+"/") {
			return "", fmt.Errorf("%q leaves %s", target, base)
		}
		target = joined
	}
	if target = path.Clean(target); target == "/" {
		return "", errors.New("/ is not a file's path")
	}
	return target, nil
}

// fileObjects mounts the service's configs and secrets: one file each,
// its content a file of the project (file), given (content, configs
// only) or a variable of the project's environment (environment), at
// /<source> (configs) or /run/secrets/<source> (secrets) unless a target
// says where.
func (c *serviceConv) fileObjects(m *manifest.Manifest, ct *manifest.Container, s types.ServiceConfig) {
	for i, ref := range s.Configs {
		obj, ok := c.t.project.Configs[ref.Source]
		c.fileObject(m, ct, fmt.Sprintf("configs[%d]", i), fmt.Sprintf("config-%d", i), types.FileReferenceConfig(ref), types.FileObjectConfig(obj), ok, false)
	}
	for i, ref := range s.Secrets {
		obj, ok := c.t.project.Secrets[ref.Source]
		c.fileObject(m, ct, fmt.Sprintf("secrets[%d]", i), fmt.Sprintf("secret-%d", i), types.FileReferenceConfig(ref), types.FileObjectConfig(obj), ok, true)
	}
}

// fileObject mounts one config or secret (ref, of the project's obj) as
// volume, or adds the reasons it cannot: its owner, its mode, its target,
// then its source.
func (c *serviceConv) fileObject(m *manifest.Manifest, ct *manifest.Container, key, volume string, ref types.FileReferenceConfig, obj types.FileObjectConfig, found, secret bool) {
	kind, top := "config", "configs"
	if secret {
		kind, top = "secret", "secrets"
	}
	if !found {
		c.add(key+".source", "no %s %s in the project's %s", kind, ref.Source, top)
		return
	}
	ok := true
	if ref.UID != "" || ref.GID != "" {
		c.add(key, "uid and gid are not supported: hostlet's files are owned by root and readable by every user (mode 0444)")
		ok = false
	}
	mode, modeOK := c.fileMode(key, kind, ref)
	ok = ok && modeOK
	target, err := fileTarget(ref, secret)
	if err != nil {
		c.add(key+".target", "%v", err)
		ok = false
	}
	f := c.fileContent(key, kind, top, ref, obj, secret)
	if f == nil || !ok {
		return
	}
	if mode != 0 {
		items := slices.Clone(f.Items)
		items[0].Mode = mode
		f = manifest.NewFiles(f.Source, secret, items)
	}
	c.volumeKey(len(m.Volumes), key)
	m.Volumes = append(m.Volumes, manifest.Volume{Name: volume, Files: f})
	ct.VolumeMounts = append(ct.VolumeMounts, manifest.VolumeMount{Name: volume, MountPath: target, ReadOnly: true})
}

// fileMode returns the mode ref gives its file (0: the default, 0444), or
// false after adding why it is not one: out of range, with write bits (the
// file is mounted read-only) or 0 (unreadable).
func (c *serviceConv) fileMode(key, kind string, ref types.FileReferenceConfig) (uint32, bool) {
	if ref.Mode == nil {
		return 0, true
	}
	switch m := *ref.Mode; {
	case m < 0 || m > 0o777:
		c.add(key+".mode", "%#o is not a file mode (0 to 0777)", m)
	case m&0o222 != 0:
		c.add(key+".mode", "%#o has write bits, and the %s is mounted read-only: drop them (0444)", m, kind)
	case m == 0:
		c.add(key+".mode", "0 makes the %s unreadable; give 0444 or leave mode out", kind)
	default:
		return uint32(m), true
	}
	return 0, false
}

// fileContent returns the one file the config or secret ref.Source holds:
// a file of the project, a variable of the project's environment or
// (configs only) a content; or nil after adding why there is none
// (external, a folder, an unset variable, no source at all).
func (c *serviceConv) fileContent(key, kind, top string, ref types.FileReferenceConfig, obj types.FileObjectConfig, secret bool) *manifest.Files {
	switch {
	case bool(obj.External):
		c.add(key+".source", "%s %s is external (made by a swarm or by hand): hostlet mounts only a file of the project, a content or an environment variable", kind, ref.Source)
		return nil
	case obj.File != "":
		f, read := c.projectFiles(key+".source", obj.File, secret)
		if !read {
			return nil
		}
		if !f.Single() {
			c.add(key+".source", "%s %s: %s is a folder, not a file", kind, ref.Source, obj.File)
			return nil
		}
		return f
	case obj.Environment != "":
		v, set := c.t.env[obj.Environment]
		if !set {
			c.add(key+".source", "%s %s: variable %s has no value (set it in .env or the host's compose.env)", kind, ref.Source, obj.Environment)
			return nil
		}
		return c.valueFiles(key+".source", kind+" "+ref.Source, secret, v)
	case obj.Content != "" && !secret:
		return c.valueFiles(key+".source", kind+" "+ref.Source, secret, obj.Content)
	default:
		what := "file, content or environment"
		if secret {
			what = "file or environment"
		}
		c.add(key+".source", "%s %s has no %s (%s)", kind, ref.Source, what, top+"."+ref.Source)
		return nil
	}
}

// namedVolume maps volume i of type volume: a named one onto the project's
// Docker volume <project>_<key> (or its external name), kept when the pod
// goes; an anonymous one onto an empty dir of the pod, which goes with it.
func (c *serviceConv) namedVolume(key string, i int, v types.ServiceVolumeConfig) (manifest.Volume, bool) {
	if o := v.Volume; o != nil && (o.NoCopy || o.Subpath != "" || len(o.Labels) > 0) {
		c.add(key+".volume", "nocopy, subpath and labels are not supported yet")
		return manifest.Volume{}, false
	}
	if v.Source == "" {
		return manifest.Volume{Name: fmt.Sprintf("anon-%d", i)}, true
	}
	cfg, ok := c.t.project.Volumes[v.Source]
	if !ok {
		c.add(key+".source", "no volume %s in the project's volumes", v.Source)
		return manifest.Volume{}, false
	}
	return manifest.Volume{Name: fmt.Sprintf("vol-%d", i), DockerVolume: cfg.Name, External: bool(cfg.External)}, true
}

// ipam sets a project network's IPAM settings on n: the default driver,
// an IPv4 pool and an IPv6 pool (subnet, gateway, ip_range), told apart
// by the subnet; errors are the service's, keyed by the project's
// network.
func (c *serviceConv) ipam(key string, cfg types.IPAMConfig, n *manifest.Network) {
	if cfg.Driver != "" && cfg.Driver != "default" {
		c.add("networks."+key, "network %s: IPAM driver %q is not supported (default)", key, cfg.Driver)
	}
	var v4, v6 int
	for _, p := range cfg.Config {
		switch {
		case p == nil:
		case strings.Contains(p.Subnet, ":"):
			n.IPv6Subnet, n.IPv6Gateway, n.IPv6IPRange = p.Subnet, p.Gateway, p.IPRange
			v6++
		default:
			n.Subnet, n.Gateway, n.IPRange = p.Subnet, p.Gateway, p.IPRange
			v4++
		}
	}
	if v4 > 1 || v6 > 1 {
		c.add("networks."+key, "network %s: %d IPv4 and %d IPv6 IPAM pools; hostlet takes one of each", key, v4, v6)
	}
}

// hostAccess maps the service's privileges, capabilities, devices,
// security options, limits, sysctls, log driver and host namespaces;
// validation checks them against the host's policy.
func (c *serviceConv) hostAccess(m *manifest.Manifest, ct *manifest.Container, s types.ServiceConfig) {
	ct.Privileged, ct.CapAdd, ct.CapDrop, ct.SecurityOpt = s.Privileged, s.CapAdd, s.CapDrop, s.SecurityOpt
	for _, d := range s.Devices {
		ct.Devices = append(ct.Devices, manifest.Device{HostPath: d.Source, ContainerPath: d.Target, Permissions: d.Permissions})
	}
	for _, name := range slices.Sorted(maps.Keys(s.Ulimits)) {
		u := s.Ulimits[name]
		if u == nil {
			continue
		}
		l := manifest.Ulimit{Name: name, Soft: int64(u.Soft), Hard: int64(u.Hard)}
		if u.Single != 0 {
			l.Soft, l.Hard = int64(u.Single), int64(u.Single)
		}
		ct.Ulimits = append(ct.Ulimits, l)
	}
	if len(s.Sysctls) > 0 {
		ct.Sysctls = map[string]string(s.Sysctls)
	}
	if l := s.Logging; l != nil && (l.Driver != "" || len(l.Options) > 0) {
		// Options without a driver are the engine's default driver's,
		// as in Compose.
		ct.Logging = &manifest.Logging{Driver: l.Driver, Options: map[string]string(l.Options)}
	}
	switch mode := s.NetworkMode; {
	case mode == "":
	case mode == "host":
		m.HostNetwork = true
	case mode == "bridge":
		// Docker's default bridge: a pod without networks.
	case mode == "none":
		c.add("network_mode", "none: a pod without a network is not supported yet")
	case strings.HasPrefix(mode, types.ServicePrefix):
		m.NetworkOf = c.networkOf(strings.TrimPrefix(mode, types.ServicePrefix))
	case strings.HasPrefix(mode, types.NetworkModeContainerPrefix):
		c.add("network_mode", "%q: a container hostlet does not manage; join a service's network (service:NAME) instead", mode)
	default:
		c.add("network_mode", "%q is not one of host, bridge", mode)
	}
	for _, ns := range []struct {
		key, mode string
		set       *bool
	}{{"pid", s.Pid, &m.HostPID}, {"ipc", s.Ipc, &m.HostIPC}} {
		switch ns.mode {
		case "":
		case "host":
			*ns.set = true
		default:
			c.add(ns.key, "%q is not supported (host, or leave it out)", ns.mode)
		}
	}
}

// networkOf is the pod of service name, whose network the service joins
// (network_mode: service:NAME): a service of the project, started, of one
// container (compose-go checks that it is there and not disabled).
func (c *serviceConv) networkOf(name string) string {
	target, ok := c.t.project.Services[name]
	switch {
	case !ok:
		c.add("network_mode", "service %s is not a started service of the project", name)
		return ""
	case target.GetScale() > 1:
		c.add("network_mode", "service %s has %d replicas: a service joins the network of one container", name, target.GetScale())
		return ""
	}
	return PodID(c.t.project.Name, name, 0)
}

// networks are the service's networks in Compose's order (priority, then
// name): each a project network <project>_<key> (the implicit default
// included) or an external one, with the service's name as an alias
// beside its own aliases, as Compose does.
func (c *serviceConv) networks(s types.ServiceConfig) []manifest.Network {
	if s.NetworkMode != "" {
		// The host's or Docker's default bridge (hostAccess), or refused.
		return nil
	}
	var out []manifest.Network
	for _, key := range s.NetworksByPriority() {
		cfg, ok := c.t.project.Networks[key]
		if !ok {
			c.add("networks."+key, "no network %s in the project's networks", key)
			continue
		}
		c.key(fmt.Sprintf("networks[%d]", len(out)), "networks."+key)
		n := manifest.Network{Name: cfg.Name, External: bool(cfg.External), Internal: cfg.Internal, Aliases: []string{c.name},
			EnableIPv6: cfg.EnableIPv6 != nil && *cfg.EnableIPv6}
		if len(cfg.DriverOpts) > 0 {
			n.DriverOptions = maps.Clone(map[string]string(cfg.DriverOpts))
		}
		c.ipam(key, cfg.Ipam, &n)
		if sc := s.Networks[key]; sc != nil {
			for _, a := range sc.Aliases {
				if !slices.Contains(n.Aliases, a) {
					n.Aliases = append(n.Aliases, a)
				}
			}
			n.IPv4Address, n.IPv6Address = sc.Ipv4Address, sc.Ipv6Address
		}
		for _, a := range c.t.linkAliases[c.name][key] {
			if !slices.Contains(n.Aliases, a) {
				n.Aliases = append(n.Aliases, a)
			}
		}
		out = append(out, n)
	}
	return out
}
