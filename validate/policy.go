package validate

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/docker/go-units"
	"github.com/moby/sys/capability"

	"github.com/hostlet/hostlet/internal/textcap"
	"github.com/hostlet/hostlet/manifest"
)

// Policy is what the host config lets a pod take of the host (its
// policy block). The zero value allows none of it.
type Policy struct {
	// Privileged allows privileged containers, and security options
	// that lift confinement (seccomp, apparmor unconfined; label
	// disable).
	Privileged bool
	// Capabilities are the capabilities a container may add (names as
	// capAdd takes them; ALL: any).
	Capabilities []string
	// HostNetwork allows the host's network, PID and IPC namespaces.
	HostNetwork bool
	// Devices are the host devices a container may be given (exact
	// paths).
	Devices []string
	// LogDrivers are the log drivers a container may use beyond
	// json-file, local, journald and none, and with any option (they run
	// in the engine, as root, on the host's network and files).
	LogDrivers []string
	// Runtimes are the OCI runtimes beyond runc a container may name.
	Runtimes []string
	// DefaultLogDriver is the engine's default log driver, whose options
	// a container gives without naming a driver: the agent reads it from
	// the engine (it is no config key). Empty, as in CI: json-file, the
	// engines' usual default. Options it does not take are refused here,
	// before anything stops, not by the engine at create.
	DefaultLogDriver string
	// EnginePlatform is the engine's os/architecture (linux/amd64), read
	// from the engine by the agent like DefaultLogDriver: a container's
	// platform must be it. Empty, as in CI: not checked.
	EnginePlatform string
	// EnginePodman: the engine is Podman, read from it like EnginePlatform:
	// a network's bridge options that its Docker-compatible API ignores
	// are refused here, before anything stops. False, as in CI: not
	// checked.
	EnginePodman bool
}

// defaultLogDriver is the driver log options without a driver are for.
func (p Policy) defaultLogDriver() string {
	if p.DefaultLogDriver == "" {
		return "json-file"
	}
	return p.DefaultLogDriver
}

// freeLogDrivers are the log drivers any container may use: they write
// where the engine keeps its logs, with the options below.
var freeLogDrivers = map[string][]string{
	"json-file": {"max-size", "max-file", "compress", "labels", "labels-regex", "env", "env-regex", "tag"},
	"local":     {"max-size", "max-file", "compress"},
	"journald":  {"tag", "labels", "labels-regex", "env", "env-regex"},
	"none":      {},
}

// logOptionValue says why the value of option k of driver is one the
// engine refuses, at create or when the container starts (after the
// version it replaces is stopped), or "": sizes and counts in range,
// booleans, a tag that parses as a template. options are all of them.
func logOptionValue(driver, k, v string, options map[string]string) string {
	switch k {
	case "max-size":
		if n, err := units.FromHumanSize(v); err != nil || n <= 0 {
			return fmt.Sprintf("%q is not a size above 0 (10m, 1g, ...)", textcap.Excerpt(v))
		}
	case "max-file":
		if n, err := strconv.Atoi(v); err != nil || n < 1 {
			return fmt.Sprintf("%q is not a count of at least 1", textcap.Excerpt(v))
		}
	case "compress":
		on, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Sprintf("%q is not true or false", textcap.Excerpt(v))
		}
		if files, _ := strconv.Atoi(options["max-file"]); on && driver == "json-file" && (options["max-size"] == "" || files < 2) {
			return "true needs max-size and a max-file of 2 or more (the engine refuses it otherwise)"
		}
	case "tag":
		if _, err := template.New("tag").Funcs(logTagFuncs).Parse(v); err != nil {
			return "not a tag template the engine parses (Go templates: {{.Name}}, {{.ID}}, ...)"
		}
	}
	return ""
}

// logTagFuncs are the functions the engine's log tag templates may call
// (moby's templates package), for parsing only.
var logTagFuncs = template.FuncMap{
	"json": fmt.Sprint, "split": fmt.Sprint, "join": fmt.Sprint, "title": fmt.Sprint,
	"lower": fmt.Sprint, "upper": fmt.Sprint, "pad": fmt.Sprint, "truncate": fmt.Sprint,
}

// runtimeRE is an OCI runtime's name as the engine registers one, at most
// 128 bytes (checked apart: a counted repetition compiles to 50 KB).
var runtimeRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

// podmanDefaultLogDrivers are Podman's own default drivers, free for log
// options given without a driver on a Podman whose default they are
// (named in a manifest they are Podman's only, and refused as others).
var podmanDefaultLogDrivers = map[string][]string{"k8s-file": {"max-size"}}

// maxLogBuffer bounds the engine memory a non-blocking log driver may
// buffer for one container (max-buffer-size).
const maxLogBuffer = 16 << 20

// Bounds of a container's host settings.
const (
	MaxHostSettings = 64
	maxSettingLen   = 1024
)

// allCapabilities stands for every capability in capAdd, capDrop and
// policy.capabilities.
const allCapabilities = "ALL"

// knownCapabilities are the Linux capability names (upper case, without
// CAP_), from moby/sys/capability's list.
var knownCapabilities = func() map[string]bool {
	out := map[string]bool{}
	for _, c := range capability.ListKnown() {
		out[strings.ToUpper(c.String())] = true
	}
	return out
}()

// ulimitNames are the limits Docker takes (setrlimit's, without RLIMIT_).
var ulimitNames = []string{"as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}

var (
	// sysctlRE is a sysctl's name: dot-separated parts.
	sysctlRE = regexp.MustCompile(`^[a-z0-9_]+(\.[a-zA-Z0-9_-]+)+$`)
	// logDriverRE is a log driver's name (a plugin's may have a tag).
	logDriverRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.:/-]*$`)
	logOptionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]*$`)
)

// namespacedSysctl reports whether a sysctl is one Docker sets in a
// container's own namespaces, and whether it is the network namespace's.
func namespacedSysctl(name string) (ok, network bool) {
	switch {
	case strings.HasPrefix(name, "net."):
		return true, true
	case strings.HasPrefix(name, "fs.mqueue."):
		return true, false
	}
	return slices.Contains([]string{"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem", "kernel.shmall", "kernel.shmmax", "kernel.shmmni", "kernel.shm_rmid_forced"}, name), false
}

// hostNamespaces checks the pod's use of the host's namespaces.
func (c *checker) hostNamespaces(m manifest.Manifest, p Policy) {
	for _, ns := range []struct {
		field string
		set   bool
	}{{"hostNetwork", m.HostNetwork}, {"hostPID", m.HostPID}, {"hostIPC", m.HostIPC}} {
		if ns.set && !p.HostNetwork {
			c.add(ns.field, "the host's namespaces are refused: set the host config's policy.hostNetwork: true to allow them")
		}
	}
	if !m.HostNetwork {
		return
	}
	if len(m.Networks) > 0 {
		c.add("networks", "a pod on the host's network joins no other network")
	}
	for i, ct := range m.Containers {
		for j, port := range ct.Ports {
			f := fmt.Sprintf("containers[%d].ports[%d]", i, j)
			if port.HostPort != 0 && port.HostPort != port.ContainerPort {
				c.add(f+".hostPort", "%d: on the host's network a port is the host's own: hostPort is containerPort (%d) or unset", port.HostPort, port.ContainerPort)
			}
			if port.HostIP != "" {
				c.add(f+".hostIP", "on the host's network the process chooses its addresses: leave hostIP unset")
			}
		}
	}
}

// hostAccess checks container f's privileges, capabilities, devices,
// security options, limits, sysctls and log driver. shared: the pod has
// an infra container holding its network namespace; hostNetwork: that
// namespace is the host's.
func (c *checker) hostAccess(f string, ct manifest.Container, p Policy, shared, hostNetwork, hostIPC bool) {
	if ct.Privileged && !p.Privileged {
		c.add(f+".privileged", "a privileged container can take over the host: set the host config's policy.privileged: true to allow it")
	}
	allowedCaps := map[string]bool{}
	for _, name := range p.Capabilities {
		allowedCaps[manifest.CapabilityName(name)] = true
	}
	for _, l := range []struct {
		field string
		caps  []string
		add   bool
	}{{"capAdd", ct.CapAdd, true}, {"capDrop", ct.CapDrop, false}} {
		if len(l.caps) > MaxHostSettings {
			c.add(f+"."+l.field, "%d capabilities are over the limit of %d", len(l.caps), MaxHostSettings)
			continue
		}
		for j, raw := range l.caps {
			g := fmt.Sprintf("%s.%s[%d]", f, l.field, j)
			name := manifest.CapabilityName(raw)
			switch {
			case name != allCapabilities && !knownCapabilities[name]:
				c.add(g, "%q is not a Linux capability (NET_ADMIN, SYS_TIME, ..., or ALL)", textcap.Excerpt(raw))
			case l.add && !ct.Privileged && !allowedCaps[allCapabilities] && !allowedCaps[name]:
				c.add(g, "%s is refused: list it in the host config's policy.capabilities to allow it (ALL allows any)", name)
			}
		}
	}
	c.devices(f, ct.Devices, p)
	if r := ct.Runtime; r != "" && r != "runc" && !slices.Contains(p.Runtimes, r) {
		if len(r) > 128 || !runtimeRE.MatchString(r) {
			c.add(f+".runtime", "%q is not a runtime's name", textcap.Excerpt(r))
		} else {
			c.add(f+".runtime", "%s is refused: a runtime other than runc runs the container its own way, with its own access to the host (GPUs, a VM); list it in the host config's policy.runtimes to allow it", r)
		}
	}
	c.securityOpt(f, ct.SecurityOpt, p)
	c.ulimits(f, ct.Ulimits, ct, p)
	c.sysctls(f, ct.Sysctls, shared, hostNetwork, hostIPC)
	if l := ct.Logging; l != nil {
		if l.Driver == "" && len(l.Options) == 0 {
			c.add(f+".logging.driver", "required without options (json-file, local, journald, ...; leave logging out for the engine's default)")
		} else if l.Driver != "" && (!logDriverRE.MatchString(l.Driver) || len(l.Driver) > 128) {
			c.add(f+".logging.driver", "%q is not a log driver's name (json-file, local, journald, syslog, ...)", textcap.Excerpt(l.Driver))
		} else {
			c.logPolicy(f+".logging", l, p)
		}
		if len(l.Options) > MaxHostSettings {
			c.add(f+".logging.options", "%d options are over the limit of %d", len(l.Options), MaxHostSettings)
		}
		for _, k := range sortedKeys(l.Options) {
			if !logOptionRE.MatchString(k) || len(k) > 128 {
				c.add(fmt.Sprintf("%s.logging.options[%q]", f, textcap.Excerpt(k)), "not an option name")
			} else if v := l.Options[k]; len(v) > maxSettingLen || strings.ContainsAny(v, "\x00\n") {
				c.add(fmt.Sprintf("%s.logging.options[%q]", f, k), "a value of one line, at most %d bytes", maxSettingLen)
			}
		}
	}
}

// logPolicy refuses a log driver, or an option of one, that reaches
// beyond the engine's own log files unless policy.logDrivers lists the
// driver.
func (c *checker) logPolicy(f string, l *manifest.Logging, p Policy) {
	if l.Driver != "" && slices.Contains(p.LogDrivers, l.Driver) {
		return
	}
	driver := l.Driver
	if driver == "" {
		// The engine's default one (the host's choice, which may be any):
		// its own options, none if it may reach beyond its files.
		driver = p.defaultLogDriver()
	}
	free, ok := freeLogDrivers[driver]
	if !ok && l.Driver == "" {
		free = podmanDefaultLogDrivers[driver] // none for any other
	} else if !ok {
		c.add(f+".driver", "%s is refused: a log driver other than json-file, local, journald and none runs in the engine as root and reaches the host's network or files; list it in the host config's policy.logDrivers to allow it", l.Driver)
		return
	}
	for _, k := range sortedKeys(l.Options) {
		switch v := l.Options[k]; {
		case k == "mode" && (v == "blocking" || v == "non-blocking"):
		case k == "max-buffer-size":
			if n, err := units.RAMInBytes(v); err != nil || n < 0 || n > maxLogBuffer {
				c.add(fmt.Sprintf("%s.options[%q]", f, k), "at most %d bytes of the engine's memory (16m); list %s in the host config's policy.logDrivers to allow more", maxLogBuffer, driver)
			} else if l.Options["mode"] != "non-blocking" {
				c.add(fmt.Sprintf("%s.options[%q]", f, k), "only with mode: non-blocking (the engine refuses it otherwise)")
			}
		case slices.Contains(free, k):
			if msg := logOptionValue(driver, k, v, l.Options); msg != "" {
				c.add(fmt.Sprintf("%s.options[%q]", f, k), "%s", msg)
			}
		default:
			if l.Driver == "" {
				c.add(fmt.Sprintf("%s.options[%q]", f, textcap.Excerpt(k)), "not an option of the engine's default log driver (%s) hostlet allows (%s); name the driver to give another", driver, strings.Join(append(slices.Clone(free), "mode", "max-buffer-size"), ", "))
				continue
			}
			c.add(fmt.Sprintf("%s.options[%q]", f, textcap.Excerpt(k)), "not an option of %s hostlet allows (%s, mode, max-buffer-size); list %s in the host config's policy.logDrivers to allow any", l.Driver, strings.Join(free, ", "), l.Driver)
		}
	}
}

func (c *checker) devices(f string, ds []manifest.Device, p Policy) {
	if len(ds) > MaxHostSettings {
		c.add(f+".devices", "%d devices are over the limit of %d", len(ds), MaxHostSettings)
		return
	}
	for j, d := range ds {
		g := fmt.Sprintf("%s.devices[%d]", f, j)
		switch {
		case !path.IsAbs(d.HostPath) || path.Clean(d.HostPath) != d.HostPath || !strings.HasPrefix(d.HostPath, "/dev/"):
			c.add(g+".hostPath", "%q is not a device path (an absolute, clean path under /dev)", textcap.Excerpt(d.HostPath))
		case !slices.Contains(p.Devices, d.HostPath):
			c.add(g+".hostPath", "%s is refused: list it in the host config's policy.devices to allow it", d.HostPath)
		}
		if d.ContainerPath != "" && (!path.IsAbs(d.ContainerPath) || len(d.ContainerPath) > 4096) {
			c.add(g+".containerPath", "%q is not an absolute path", textcap.Excerpt(d.ContainerPath))
		}
		if d.Permissions != "" && (strings.Trim(d.Permissions, "rwm") != "" || len(d.Permissions) > 3) {
			c.add(g+".permissions", "%q is not some of r, w and m", textcap.Excerpt(d.Permissions))
		}
	}
}

// securityOpt checks container f's security options: no-new-privileges
// and a named AppArmor profile always; lifting confinement with
// policy.privileged; nothing else (a seccomp profile is a host file).
func (c *checker) securityOpt(f string, opts []string, p Policy) {
	if len(opts) > MaxHostSettings {
		c.add(f+".securityOpt", "%d options are over the limit of %d", len(opts), MaxHostSettings)
		return
	}
	keys := map[string]bool{}
	for j, o := range opts {
		g := fmt.Sprintf("%s.securityOpt[%d]", f, j)
		o = manifest.SecurityOpt(o)
		key, value, _ := strings.Cut(o, "=")
		if keys[key] {
			// The engine takes the last; one of each keeps the order
			// meaningless.
			c.add(g, "a second %s option: give one", key)
			continue
		}
		keys[key] = true
		switch {
		case key == "no-new-privileges" && (value == "" || value == "true" || value == "false"):
		case o == "apparmor=docker-default":
		case o == "seccomp=unconfined" || o == "apparmor=unconfined" || o == "label=disable" || o == "systempaths=unconfined":
			if !p.Privileged {
				c.add(g, "%s lifts the container's confinement: set the host config's policy.privileged: true to allow it", o)
			}
		case key == "apparmor" && value != "" && dockerNameRE.MatchString(value):
			// A profile of the host's other than docker-default may be
			// unconfined (Ubuntu's runc, crun, ... are).
			if !p.Privileged {
				c.add(g, "%s: a host profile other than docker-default may be unconfined: set the host config's policy.privileged: true to allow it", o)
			}
		default:
			c.add(g, "%q is not supported (no-new-privileges, apparmor=PROFILE, and with policy.privileged seccomp=unconfined, apparmor=unconfined, label=disable, systempaths=unconfined)", textcap.Excerpt(o))
		}
	}
}

// schedulingLimits are the limits that grant what CAP_SYS_NICE does:
// real-time priority and a higher priority.
var schedulingLimits = []string{"rtprio", "rttime", "nice"}

func (c *checker) ulimits(f string, ls []manifest.Ulimit, ct manifest.Container, p Policy) {
	if len(ls) > MaxHostSettings {
		c.add(f+".ulimits", "%d limits are over the limit of %d", len(ls), MaxHostSettings)
		return
	}
	seen := map[string]bool{}
	for j, l := range ls {
		g := fmt.Sprintf("%s.ulimits[%d]", f, j)
		switch {
		case !slices.Contains(ulimitNames, l.Name):
			c.add(g+".name", "%q is not one of %s", textcap.Excerpt(l.Name), strings.Join(ulimitNames, ", "))
		case seen[l.Name]:
			c.add(g+".name", "duplicate limit %q", l.Name)
		}
		seen[l.Name] = true
		if slices.Contains(schedulingLimits, l.Name) && (l.Soft != 0 || l.Hard != 0) && !ct.Privileged && !allowsCapability(p, "SYS_NICE") {
			c.add(g+".name", "%s grants what SYS_NICE does (real-time or higher priority, beyond the pod's CPU limit): list SYS_NICE in the host config's policy.capabilities to allow it", l.Name)
		}
		unlimited := l.Soft == -1 && l.Hard == -1
		if !unlimited && (l.Soft < 0 || l.Hard < 0 || l.Soft > l.Hard) {
			c.add(g, "soft %d, hard %d: 0 <= soft <= hard (or both -1: unlimited)", l.Soft, l.Hard)
		}
	}
}

// allowsCapability reports whether the policy lets a container add name.
func allowsCapability(p Policy, name string) bool {
	for _, c := range p.Capabilities {
		if c := manifest.CapabilityName(c); c == allCapabilities || c == name {
			return true
		}
	}
	return false
}

func (c *checker) sysctls(f string, s map[string]string, shared, hostNetwork, hostIPC bool) {
	if len(s) > MaxHostSettings {
		c.add(f+".sysctls", "%d sysctls are over the limit of %d", len(s), MaxHostSettings)
		return
	}
	for _, k := range sortedKeys(s) {
		g := fmt.Sprintf("%s.sysctls[%q]", f, textcap.Excerpt(k))
		ok, network := namespacedSysctl(k)
		switch {
		case !sysctlRE.MatchString(k) || len(k) > 256:
			c.add(g, "not a sysctl's name")
		case !ok:
			c.add(g, "not a namespaced sysctl (net.*, kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*): it would be the host's")
		case network && hostNetwork:
			c.add(g, "on the host's network a net.* sysctl would be the host's")
		case !network && hostIPC:
			c.add(g, "in the host's IPC namespace an IPC sysctl would be the host's")
		case network && shared:
			c.add(g, "in a pod of several containers a net.* sysctl is the pod's network namespace's: not supported yet")
		}
		if v := s[k]; len(v) > maxSettingLen || strings.ContainsAny(v, "\x00\n") {
			c.add(g, "a value of one line, at most %d bytes", maxSettingLen)
		}
	}
}
