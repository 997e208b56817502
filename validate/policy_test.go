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
