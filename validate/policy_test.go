package validate_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// Each setting that gives a pod power over the host is refused unless
// the host's policy allows it, the error naming the field and the config
// key; the rest of the host settings are checked for form.
func TestHostAccessPolicy(t *testing.T) {
	all := validate.Policy{Privileged: true, Capabilities: []string{"ALL"}, HostNetwork: true, Devices: []string{"/dev/ttyUSB0"}}
	tests := []struct {
		name   string
		edit   func(m *manifest.Manifest)
		policy validate.Policy
		want   string // "" for none
	}{
		{"privileged refused", func(m *manifest.Manifest) { m.Containers[0].Privileged = true }, validate.Policy{},
			`containers[0].privileged: a privileged container can take over the host: set the host config's policy.privileged: true to allow it`},
		{"privileged allowed", func(m *manifest.Manifest) { m.Containers[0].Privileged = true }, validate.Policy{Privileged: true}, ""},
		{"capability refused", func(m *manifest.Manifest) { m.Containers[0].CapAdd = []string{"net_admin"} }, validate.Policy{Capabilities: []string{"SYS_TIME"}},
			`containers[0].capAdd[0]: NET_ADMIN is refused: list it in the host config's policy.capabilities to allow it (ALL allows any)`},
		{"capability listed", func(m *manifest.Manifest) { m.Containers[0].CapAdd = []string{"CAP_NET_ADMIN"} }, validate.Policy{Capabilities: []string{"net_admin"}}, ""},
		{"capability ALL by policy", func(m *manifest.Manifest) { m.Containers[0].CapAdd = []string{"ALL"} }, validate.Policy{Capabilities: []string{"ALL"}}, ""},
		{"ALL needs ALL", func(m *manifest.Manifest) { m.Containers[0].CapAdd = []string{"ALL"} }, validate.Policy{Capabilities: []string{"NET_ADMIN"}},
			`containers[0].capAdd[0]: ALL is refused`},
		{"unknown capability", func(m *manifest.Manifest) { m.Containers[0].CapAdd = []string{"BOGUS"} }, all,
			`containers[0].capAdd[0]: "BOGUS" is not a Linux capability`},
		{"drop is free", func(m *manifest.Manifest) { m.Containers[0].CapDrop = []string{"ALL", "chown"} }, validate.Policy{}, ""},
		{"host network refused", func(m *manifest.Manifest) { m.HostNetwork = true }, validate.Policy{},
			`hostNetwork: the host's namespaces are refused: set the host config's policy.hostNetwork: true to allow them`},
		{"host pid refused", func(m *manifest.Manifest) { m.HostPID = true }, validate.Policy{}, `hostPID: the host's namespaces are refused`},
		{"host network with networks", func(m *manifest.Manifest) {
			m.HostNetwork = true
			m.Networks = []manifest.Network{{Name: "shop"}}
		}, all, `networks: a pod on the host's network joins no other network`},
		{"host network remaps a port", func(m *manifest.Manifest) {
			m.HostNetwork = true
			m.Containers[0].Ports = []manifest.Port{{ContainerPort: 80, HostPort: 8080}}
		}, all, `containers[0].ports[0].hostPort: 8080: on the host's network a port is the host's own`},
		{"device refused", func(m *manifest.Manifest) { m.Containers[0].Devices = []manifest.Device{{HostPath: "/dev/sda"}} }, all,
			`containers[0].devices[0].hostPath: /dev/sda is refused: list it in the host config's policy.devices to allow it`},
		{"device not under /dev", func(m *manifest.Manifest) { m.Containers[0].Devices = []manifest.Device{{HostPath: "/etc/shadow"}} }, all,
			`containers[0].devices[0].hostPath: "/etc/shadow" is not a device path`},
		{"device listed", func(m *manifest.Manifest) {
			m.Containers[0].Devices = []manifest.Device{{HostPath: "/dev/ttyUSB0", ContainerPath: "/dev/modem", Permissions: "rw"}}
		}, all, ""},
		{"device permissions", func(m *manifest.Manifest) {
			m.Containers[0].Devices = []manifest.Device{{HostPath: "/dev/ttyUSB0", Permissions: "rwx"}}
		}, all,
			`containers[0].devices[0].permissions: "rwx" is not some of r, w and m`},
		{"unconfined needs privileged", func(m *manifest.Manifest) { m.Containers[0].SecurityOpt = []string{"seccomp:unconfined"} }, validate.Policy{},
			`containers[0].securityOpt[0]: seccomp=unconfined lifts the container's confinement: set the host config's policy.privileged: true to allow it`},
		{"no-new-privileges is free", func(m *manifest.Manifest) {
			m.Containers[0].SecurityOpt = []string{"no-new-privileges", "apparmor=docker-default"}
		}, validate.Policy{}, ""},
		{"seccomp profile file", func(m *manifest.Manifest) { m.Containers[0].SecurityOpt = []string{"seccomp=/etc/profile.json"} }, all,
			`containers[0].securityOpt[0]: "seccomp=/etc/profile.json" is not supported`},
		{"ulimit name", func(m *manifest.Manifest) {
			m.Containers[0].Ulimits = []manifest.Ulimit{{Name: "files", Soft: 1, Hard: 2}}
		}, all,
			`containers[0].ulimits[0].name: "files" is not one of`},
		{"ulimit soft over hard", func(m *manifest.Manifest) {
			m.Containers[0].Ulimits = []manifest.Ulimit{{Name: "nofile", Soft: 4, Hard: 2}}
		}, all,
			`containers[0].ulimits[0]: soft 4, hard 2: 0 <= soft <= hard`},
		{"ulimit unlimited", func(m *manifest.Manifest) {
			m.Containers[0].Ulimits = []manifest.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}}
		}, validate.Policy{}, ""},
		{"host sysctl", func(m *manifest.Manifest) { m.Containers[0].Sysctls = map[string]string{"kernel.panic": "1"} }, all,
			`containers[0].sysctls["kernel.panic"]: not a namespaced sysctl`},
		{"net sysctl in a shared pod", func(m *manifest.Manifest) {
			m.Containers = append(m.Containers, manifest.Container{Name: "side", Image: "example.org/side:1"})
			m.Containers[0].Sysctls = map[string]string{"net.ipv4.ip_forward": "1"}
		}, all, `containers[0].sysctls["net.ipv4.ip_forward"]: in a pod of several containers a net.* sysctl is the pod's network namespace's`},
		{"namespaced sysctls", func(m *manifest.Manifest) {
			m.Containers[0].Sysctls = map[string]string{"net.core.somaxconn": "1024", "kernel.shmmax": "1", "fs.mqueue.msg_max": "10"}
		}, validate.Policy{}, ""},
		{"log option value", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Driver: "json-file", Options: map[string]string{"max-size": "1m\nx"}}
		}, all, `containers[0].logging.options["max-size"]: a value of one line`},
		{"log driver", func(m *manifest.Manifest) { m.Containers[0].Logging = &manifest.Logging{Driver: "Bad Driver"} }, all,
			`containers[0].logging.driver: "Bad Driver" is not a log driver's name`},
		{"runc named", func(m *manifest.Manifest) { m.Containers[0].Runtime = "runc" }, validate.Policy{}, ""},
		{"another runtime without the policy", func(m *manifest.Manifest) { m.Containers[0].Runtime = "nvidia" }, validate.Policy{},
			`containers[0].runtime: nvidia is refused: a runtime other than runc runs the container its own way, with its own access to the host (GPUs, a VM); list it in the host config's policy.runtimes to allow it`},
		{"another runtime with the policy", func(m *manifest.Manifest) { m.Containers[0].Runtime = "nvidia" }, validate.Policy{Runtimes: []string{"nvidia"}}, ""},
		{"a runtime's name", func(m *manifest.Manifest) { m.Containers[0].Runtime = "a b" }, validate.Policy{}, `containers[0].runtime: "a b" is not a runtime's name`},
		// Values the engine refuses, at create or at start (after the
		// running version stopped), are refused here.
		{"a log size of nothing", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Driver: "json-file", Options: map[string]string{"max-size": "0"}}
		}, validate.Policy{}, `containers[0].logging.options["max-size"]: "0" is not a size above 0`},
		{"a log file count of none", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Driver: "local", Options: map[string]string{"max-file": "x"}}
		}, validate.Policy{}, `containers[0].logging.options["max-file"]: "x" is not a count of at least 1`},
		{"compress without rotation", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Driver: "json-file", Options: map[string]string{"compress": "true", "max-size": "10m"}}
		}, validate.Policy{}, `containers[0].logging.options["compress"]: true needs max-size and a max-file of 2 or more`},
		{"compress not a boolean", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"compress": "yes"}}
		}, validate.Policy{}, `containers[0].logging.options["compress"]: "yes" is not true or false`},
		{"a tag that does not parse", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Driver: "journald", Options: map[string]string{"tag": "{{.Bad"}}
		}, validate.Policy{}, `containers[0].logging.options["tag"]: not a tag template the engine parses`},
		{"a tag with the engine's functions", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Driver: "json-file", Options: map[string]string{"tag": "{{upper .Name}}/{{.ID}}", "max-size": "10m", "max-file": "3", "compress": "true"}}
		}, validate.Policy{}, ""},
		{"a buffer without non-blocking", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"max-buffer-size": "1m"}}
		}, validate.Policy{}, `containers[0].logging.options["max-buffer-size"]: only with mode: non-blocking`},
		{"the default log driver with size options", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"max-size": "10m", "max-file": "3", "mode": "non-blocking"}}
		}, validate.Policy{}, ""},
		{"the default log driver without options", func(m *manifest.Manifest) { m.Containers[0].Logging = &manifest.Logging{} }, all,
			`containers[0].logging.driver: required without options`},
		{"the default log driver with another option, whatever the policy", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"syslog-address": "udp://203.0.113.7:514"}}
		}, validate.Policy{LogDrivers: []string{"syslog", ""}}, `containers[0].logging.options["syslog-address"]: not an option of the engine's default log driver (json-file) hostlet allows`},
		// The engine's default is read by the agent: an option the
		// engine would refuse at create is refused before anything stops.
		{"the default log driver journald and a size", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"max-size": "10m"}}
		}, validate.Policy{DefaultLogDriver: "journald"}, `containers[0].logging.options["max-size"]: not an option of the engine's default log driver (journald) hostlet allows (tag, labels, labels-regex, env, env-regex, mode, max-buffer-size)`},
		{"the default log driver local and a tag", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"tag": "web"}}
		}, validate.Policy{DefaultLogDriver: "local"}, `containers[0].logging.options["tag"]: not an option of the engine's default log driver (local)`},
		{"Podman's default k8s-file and a size", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"max-size": "10m"}}
		}, validate.Policy{DefaultLogDriver: "k8s-file"}, ""},
		{"a default driver that reaches out takes no option", func(m *manifest.Manifest) {
			m.Containers[0].Logging = &manifest.Logging{Options: map[string]string{"tag": "web"}}
		}, validate.Policy{DefaultLogDriver: "syslog", LogDrivers: []string{"syslog"}}, `containers[0].logging.options["tag"]: not an option of the engine's default log driver (syslog)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := pod("web")
			tt.edit(&m)
			err := validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{Policy: tt.policy})
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want one with %q", err, tt.want)
			}
		})
	}
}

// On the host's network a container port is the host's: two pods using
// the same one conflict although neither gives a hostPort.
func TestHostNetworkPortConflict(t *testing.T) {
	a, b := pod("a"), pod("b")
	for _, m := range []*manifest.Manifest{&a, &b} {
		m.HostNetwork = true
		m.Containers[0].Ports = []manifest.Port{{ContainerPort: 9100}}
	}
	res := validate.Set([]validate.Source{{Name: "s", Manifests: []manifest.Sourced{sourced("s", "a.yaml", 0, a), sourced("s", "b.yaml", 0, b)}}},
		validate.Options{Policy: validate.Policy{HostNetwork: true}})
	if len(res.Accepted) != 1 || len(res.Rejected) != 1 || !strings.Contains(strings.Join(res.Rejected[0].Reasons, ";"), "9100") {
		t.Errorf("accepted %d rejected %+v, want b refused for port 9100", len(res.Accepted), res.Rejected)
	}
}

// TestExternalVolumeAndNetworkNeedThePolicy: a pod may mount or join a
// volume or network made outside this hostlet (another instance's, another
// team's, a local volume binding a host folder) only when the host
// config's policy lists it.
func TestExternalVolumeAndNetworkNeedThePolicy(t *testing.T) {
	p := pod("web")
	p.Volumes = []manifest.Volume{{Name: "loot", DockerVolume: "teamb_db", External: true}}
	p.Networks = []manifest.Network{{Name: "teamb_default", External: true}}
	s := sourced("s", "web.yaml", 0, p)
	err := validate.Manifest(s, validate.Options{})
	for _, want := range []string{"policy.externalVolumes", "policy.externalNetworks"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("external volume and network with no policy: %v, want an error naming %s", err, want)
		}
	}
	if err := validate.Manifest(s, validate.Options{ExternalVolumes: []string{"teamb_db"}, ExternalNetworks: []string{"*"}}); err != nil {
		t.Errorf("with the policy listing them: %v", err)
	}
}

// policyCheck validates m under policy p and reports whether it was
// refused.
func policyCheck(t *testing.T, m manifest.Manifest, p validate.Policy) error {
	t.Helper()
	return validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{Policy: p})
}

// TestHostAppArmorProfileNeedsThePolicy: apparmor=unconfined lifts
// confinement and needs policy.privileged, and so does naming a host
// profile, since a host's own profiles include unconfined ones: Ubuntu
// 24.04 ships dozens declared `flags=(unconfined)` (runc, crun, podman,
// buildah, code, chrome, ...), and lxc installs
// lxc-container-default-with-nesting (mount allowed). Naming one is
// apparmor=unconfined under another name.
func TestHostAppArmorProfileNeedsThePolicy(t *testing.T) {
	for _, prof := range []string{"runc", "crun", "podman", "lxc-container-default-with-nesting"} {
		t.Run(prof, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].SecurityOpt = []string{"apparmor=" + prof}
			if err := policyCheck(t, m, validate.Policy{}); err == nil {
				t.Errorf("securityOpt apparmor=%s accepted with an empty policy: any host profile (unconfined ones included) is the pod's to pick; only docker-default or profiles the policy lists should be", prof)
			}
		})
	}
}

// TestUlimitsThatGrantSysNiceNeedThePolicy: capAdd SYS_NICE needs
// policy.capabilities, and so do the ulimits that give the same power:
// RLIMIT_RTPRIO lets an unprivileged process take SCHED_FIFO/SCHED_RR up
// to that priority (sched_setscheduler(2)), and RLIMIT_NICE lets it raise
// its nice value to -20. A real-time busy loop on every CPU leaves the
// host 5% of each (sched_rt_runtime_us) and is not bounded by the pod's
// CPU limit (cpu.max throttles CFS only).
func TestUlimitsThatGrantSysNiceNeedThePolicy(t *testing.T) {
	for _, u := range []manifest.Ulimit{
		{Name: "rtprio", Soft: 99, Hard: 99},
		{Name: "rtprio", Soft: -1, Hard: -1},
		{Name: "nice", Soft: 40, Hard: 40},
	} {
		t.Run(u.Name, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Ulimits = []manifest.Ulimit{u}
			if err := policyCheck(t, m, validate.Policy{}); err == nil {
				t.Errorf("ulimit %s=%d:%d accepted with an empty policy: it grants what capAdd SYS_NICE (refused) would", u.Name, u.Soft, u.Hard)
			}
		})
	}
}

// TestLogDriversThatReachTheHostNeedThePolicy: log drivers run in the
// engine, on the host, as root; were any driver and any option allowed
// with an empty policy, the engine would write the container's output
// where the author says, from the host's network namespace and file
// system:
//   - syslog into the host's own syslog socket as authpriv/sshd: forged
//     auth.log lines (fail2ban bans whoever the lines name, the admin
//     included);
//   - gelf/fluentd/syslog/splunk to any address: the host's loopback
//     services and the cloud metadata address, and egress for a pod on an
//     internal network (its output leaves by the engine);
//   - TLS options naming host files (syslog-tls-key, splunk-capath): the
//     engine reads them;
//   - mode=non-blocking with a huge max-buffer-size: a slow endpoint makes
//     the engine buffer the output in its own memory (no cgroup limit).
func TestLogDriversThatReachTheHostNeedThePolicy(t *testing.T) {
	tests := map[string]*manifest.Logging{
		"host syslog socket, forged sshd auth lines": {Driver: "syslog", Options: map[string]string{
			"syslog-address": "unixgram:///dev/log", "syslog-facility": "authpriv", "tag": "sshd"}},
		"host loopback":  {Driver: "gelf", Options: map[string]string{"gelf-address": "tcp://127.0.0.1:6379"}},
		"cloud metadata": {Driver: "fluentd", Options: map[string]string{"fluentd-address": "tcp://169.254.169.254:80"}},
		"host file as TLS key": {Driver: "syslog", Options: map[string]string{
			"syslog-address": "tcp+tls://203.0.113.7:6514", "syslog-tls-cert": "/etc/docker/cert.pem", "syslog-tls-key": "/etc/docker/key.pem"}},
		"engine memory": {Driver: "gelf", Options: map[string]string{
			"gelf-address": "tcp://203.0.113.7:12201", "mode": "non-blocking", "max-buffer-size": "64g"}},
		"a plugin": {Driver: "example/driver:latest"},
		// The engine's default driver may be any of these on the host.
		"default driver, host syslog socket": {Options: map[string]string{"syslog-address": "unixgram:///dev/log", "tag": "sshd"}},
		"default driver, cloud metadata":     {Options: map[string]string{"fluentd-address": "tcp://169.254.169.254:80"}},
		"default driver, engine memory":      {Options: map[string]string{"mode": "non-blocking", "max-buffer-size": "64g"}},
	}
	for name, l := range tests {
		t.Run(name, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Logging = l
			if err := policyCheck(t, m, validate.Policy{}); err == nil {
				t.Errorf("logging %s %v accepted with an empty policy: a log driver and its options reach the host (only json-file/local/journald/none with their size options should be free)", l.Driver, l.Options)
			}
		})
	}
}

// TestIPCSysctlRefusedOnHostIPC: as net.* sysctls on the host's network
// ("they would be the host's"), the IPC ones are refused in the host's
// IPC namespace: kernel.shmmax with hostIPC would be the host's. runc
// refuses it at start, so accepted, the pod would never start (restart
// loop) instead of being refused naming the field.
func TestIPCSysctlRefusedOnHostIPC(t *testing.T) {
	for _, k := range []string{"kernel.shmmax", "kernel.sem", "fs.mqueue.msg_max"} {
		t.Run(k, func(t *testing.T) {
			m := pod("web")
			m.HostIPC = true
			m.Containers[0].Sysctls = map[string]string{k: "1"}
			if err := policyCheck(t, m, validate.Policy{HostNetwork: true}); err == nil {
				t.Errorf("sysctl %s accepted in the host's IPC namespace: it would be the host's", k)
			}
		})
	}
}

// TestSecurityOptKeyGivenTwiceRefused: Docker applies security options in
// order, the last of a key winning (no-new-privileges=true then =false:
// off); two options of one key are refused, so that no change of their
// order is a change of the container the spec hash cannot see.
func TestSecurityOptKeyGivenTwiceRefused(t *testing.T) {
	m := pod("web")
	m.Containers[0].SecurityOpt = []string{"no-new-privileges=true", "no-new-privileges=false"}
	if err := policyCheck(t, m, validate.Policy{}); err == nil {
		t.Errorf("securityOpt %v accepted: the last one wins in Docker, but the hash ignores the order", m.Containers[0].SecurityOpt)
	}
}

// TestPlatformMustBeTheEngines: a container's platform is os/arch[/variant]
// and the engine's os and architecture (no emulation is set up); without
// the engine's (offline, in CI) only its form is checked.
func TestPlatformMustBeTheEngines(t *testing.T) {
	for _, tc := range []struct {
		platform, engine, want string
	}{
		{"linux/amd64", "linux/amd64", ""},
		{"linux", "linux/amd64", ""},
		{"linux/arm64/v8", "linux/arm64", ""},
		{"linux/arm64", "linux/amd64", `"linux/arm64" is not the engine's platform linux/amd64`},
		{"windows/amd64", "linux/amd64", `"windows/amd64" is not the engine's platform linux/amd64`},
		{"linux/arm64", "", ""},
		{"Linux/AMD64", "", "is not an image platform"},
		{"linux/amd64/v1/x", "", "is not an image platform"},
		{"linux//amd64", "", "is not an image platform"},
	} {
		m := manifest.Manifest{Version: manifest.Version, ID: "web", Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1", Platform: tc.platform}}}
		err := validate.Manifest(manifest.Sourced{Manifest: m}, validate.Options{Policy: validate.Policy{EnginePlatform: tc.engine}})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s on %s: %v", tc.platform, tc.engine, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s on %s: %v, want %q", tc.platform, tc.engine, err, tc.want)
		}
	}
}
