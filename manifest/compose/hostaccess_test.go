package compose_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
	"github.com/hostlet/hostlet/validate"
)

// The keys that give a service power over the host map onto the pod's
// fields, which validation then checks against the host's policy.
func TestLoadHostAccess(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  agent:
    image: busybox
    privileged: true
    cap_add: [net_admin, CAP_SYS_TIME]
    cap_drop: [ALL]
    devices: ["/dev/ttyUSB0:/dev/modem:rw", "/dev/fuse"]
    security_opt: ["no-new-privileges:true", "apparmor=docker-default"]
    ulimits:
      nofile: {soft: 1024, hard: 2048}
      nproc: 512
    sysctls: {net.core.somaxconn: "1024"}
    logging: {driver: local, options: {max-size: 10m}}
    network_mode: host
    pid: host
    ipc: host
  plain:
    image: busybox
    network_mode: bridge
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	m := pods[0].Manifest
	c := m.Containers[0]
	want := manifest.Container{
		Privileged: true, CapAdd: []string{"net_admin", "CAP_SYS_TIME"}, CapDrop: []string{"ALL"},
		Devices:     []manifest.Device{{HostPath: "/dev/ttyUSB0", ContainerPath: "/dev/modem", Permissions: "rw"}, {HostPath: "/dev/fuse", ContainerPath: "/dev/fuse", Permissions: "rwm"}},
		SecurityOpt: []string{"no-new-privileges:true", "apparmor=docker-default"},
		Ulimits:     []manifest.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}, {Name: "nproc", Soft: 512, Hard: 512}},
		Sysctls:     map[string]string{"net.core.somaxconn": "1024"},
		Logging:     &manifest.Logging{Driver: "local", Options: map[string]string{"max-size": "10m"}},
	}
	got := manifest.Container{Privileged: c.Privileged, CapAdd: c.CapAdd, CapDrop: c.CapDrop, Devices: c.Devices, SecurityOpt: c.SecurityOpt, Ulimits: c.Ulimits, Sysctls: c.Sysctls, Logging: c.Logging}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("host access\n got %+v\nwant %+v", got, want)
	}
	if !m.HostNetwork || !m.HostPID || !m.HostIPC || len(m.Networks) != 0 {
		t.Errorf("namespaces: hostNetwork %v hostPID %v hostIPC %v networks %v", m.HostNetwork, m.HostPID, m.HostIPC, m.Networks)
	}
	if p := pods[1].Manifest; p.HostNetwork || len(p.Networks) != 0 {
		t.Errorf("network_mode bridge: hostNetwork %v networks %v, want Docker's default bridge", p.HostNetwork, p.Networks)
	}

	// Without a policy, every one of them is refused by its Compose key,
	// naming the config key that would allow it.
	err := validate.Manifest(pods[0], validate.Options{})
	text := ""
	if err != nil {
		text = err.Error()
	}
	for _, w := range []string{
		"services.agent.privileged: a privileged container can take over the host: set the host config's policy.privileged: true",
		"services.agent.network_mode: the host's namespaces are refused: set the host config's policy.hostNetwork: true",
		"services.agent.pid: ", "services.agent.ipc: ",
		"services.agent.devices[0].hostPath: /dev/ttyUSB0 is refused: list it in the host config's policy.devices",
		"services.agent.sysctls[\"net.core.somaxconn\"]: on the host's network a net.* sysctl would be the host's",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("validation without a policy: no %q in\n%s", w, text)
		}
	}
	// With the policy, only the sysctl on the host's network remains
	// (and privileged covers the capabilities).
	pods[0].Manifest.Containers[0].Sysctls = nil
	opts := validate.Options{Policy: validate.Policy{Privileged: true, HostNetwork: true, Devices: []string{"/dev/ttyUSB0", "/dev/fuse"}}}
	if err := validate.Manifest(pods[0], opts); err != nil {
		t.Errorf("with the policy: %v", err)
	}
}

// TestLoadLoggingOptionsWithoutDriver: options without a driver are the
// engine's default driver's, as in Compose (validation then allows only
// the options that stay in the engine's files).
func TestLoadLoggingOptionsWithoutDriver(t *testing.T) {
	pods, errs := load(t, mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    logging: {options: {max-size: 1m, max-file: \"3\"}}\n"}, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	l := pods[0].Manifest.Containers[0].Logging
	if l == nil || l.Driver != "" || !reflect.DeepEqual(l.Options, map[string]string{"max-size": "1m", "max-file": "3"}) {
		t.Errorf("logging %+v, want the default driver with max-size and max-file", l)
	}
	if err := validate.Manifest(pods[0], validate.Options{}); err != nil {
		t.Errorf("validation without a policy: %v", err)
	}
}

func TestLoadHostAccessRefused(t *testing.T) {
	tests := []struct{ svc, want string }{
		{"network_mode: none", `services.web.network_mode: none: a pod without a network is not supported yet`},
		{"network_mode: 'container:db'", `services.web.network_mode: "container:db": a container hostlet does not manage; join a service's network (service:NAME) instead`},
		{"pid: 'container:x'", `services.web.pid: "container:x" is not supported (host, or leave it out)`},
		{"ipc: shareable", `services.web.ipc: "shareable" is not supported (host, or leave it out)`},
	}
	for _, tt := range tests {
		t.Run(tt.svc, func(t *testing.T) {
			files := mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    " + tt.svc + "\n  db: {image: busybox}\n"}
			_, errs := load(t, files, compose.Options{})
			if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
				t.Errorf("errors %q, want %q", errs, tt.want)
			}
		})
	}
}

// A dual-stack network with bridge options, as mailcow's and wg-easy's:
// both pools, the service's two addresses and the options reach the pod.
// A service on another service's network (network_mode: service:vpn, as
// a VPN client's users are): the pod joins that service's pod, waits for
// it to start, and is refused, naming the key, what it cannot have of a
// network of its own or a service that is not one container.
func TestLoadNetworkOfService(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  vpn: {image: busybox, ports: ["8080:8080"]}
  torrent: {image: busybox, network_mode: "service:vpn"}
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	torrent := pods[0].Manifest
	if torrent.ID != "shop-torrent" || torrent.NetworkOf != "shop-vpn" || len(torrent.Networks) != 0 ||
		!reflect.DeepEqual(torrent.Dependencies(), []manifest.Dependency{{Pod: "shop-vpn", Condition: manifest.DependencyStarted}}) {
		t.Errorf("pod %s: networkOf %q, networks %v, dependencies %v; want shop-vpn's network, waiting for it to start", torrent.ID, torrent.NetworkOf, torrent.Networks, torrent.Dependencies())
	}
	for _, tt := range []struct{ service, want string }{
		{"{image: busybox, network_mode: 'service:vpn', ports: ['9090:9090']}", "services.torrent.ports: a pod on another pod's network publishes nothing: publish the ports on pod shop-vpn"},
		{"{image: busybox, network_mode: 'service:vpn', hostname: torrent}", "services.torrent.hostname: a pod on another pod's network has none of its own: set it on pod shop-vpn"},
		{"{image: busybox, network_mode: 'service:many'}", "services.torrent.network_mode: service many has 2 replicas: a service joins the network of one container"},
	} {
		files := mapFiles{"compose.yaml": "services:\n  vpn: {image: busybox}\n  many: {image: busybox, scale: 2}\n  torrent: " + tt.service + "\n"}
		pods, errs := load(t, files, compose.Options{})
		for _, p := range pods {
			if err := validate.Manifest(p, validate.Options{}); err != nil {
				errs = append(errs, err.Error())
			}
		}
		if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
			t.Errorf("%s: errors %q, want %q", tt.service, errs, tt.want)
		}
	}
}

func TestLoadIPv6AndBridgeOptions(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  vpn:
    image: busybox
    networks: {wg: {ipv4_address: 10.42.42.42, ipv6_address: "fdcc:ad94:bacf:61a3::2a"}}
networks:
  wg:
    driver: bridge
    enable_ipv6: true
    driver_opts: {com.docker.network.bridge.name: br-wg}
    ipam:
      driver: default
      config:
        - subnet: 10.42.42.0/24
        - subnet: fdcc:ad94:bacf:61a3::/64
          gateway: fdcc:ad94:bacf:61a3::1
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	want := manifest.Network{Name: "shop_wg", Aliases: []string{"vpn"}, Subnet: "10.42.42.0/24", IPv4Address: "10.42.42.42",
		EnableIPv6: true, IPv6Subnet: "fdcc:ad94:bacf:61a3::/64", IPv6Gateway: "fdcc:ad94:bacf:61a3::1", IPv6Address: "fdcc:ad94:bacf:61a3::2a",
		DriverOptions: map[string]string{"com.docker.network.bridge.name": "br-wg"}}
	if got := pods[0].Manifest.Networks; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("networks %+v, want %+v", got, want)
	}
}

func TestLoadIPAM(t *testing.T) {
	files := mapFiles{"compose.yaml": `
services:
  dns:
    image: busybox
    networks: {lan: {ipv4_address: 10.7.0.53}}
networks:
  lan:
    ipam:
      config: [{subnet: 10.7.0.0/24, gateway: 10.7.0.1, ip_range: 10.7.0.128/25}]
`}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Fatalf("errors: %q", errs)
	}
	want := manifest.Network{Name: "shop_lan", Aliases: []string{"dns"}, Subnet: "10.7.0.0/24", Gateway: "10.7.0.1", IPRange: "10.7.0.128/25", IPv4Address: "10.7.0.53"}
	if got := pods[0].Manifest.Networks; len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("networks %+v, want %+v", got, want)
	}
	for _, tt := range []struct{ ipam, want string }{
		{"{driver: dhcp}", `network lan: IPAM driver "dhcp" is not supported (default)`},
		{"{config: [{subnet: 10.7.0.0/24}, {subnet: 10.8.0.0/24}]}", `network lan: 2 IPv4 and 0 IPv6 IPAM pools; hostlet takes one of each`},
		{"{config: [{subnet: 'fd00:7::/64'}, {subnet: 'fd00:8::/64'}]}", `network lan: 0 IPv4 and 2 IPv6 IPAM pools; hostlet takes one of each`},
		{"{config: [{subnet: 10.7.0.0/24, aux_addresses: {a: 10.7.0.2}}]}", `networks.lan.ipam.config.[].aux_addresses: not supported by hostlet yet`},
	} {
		files := mapFiles{"compose.yaml": "services:\n  dns: {image: busybox, networks: [lan]}\nnetworks:\n  lan:\n    ipam: " + tt.ipam + "\n"}
		_, errs := load(t, files, compose.Options{})
		if !strings.Contains(strings.Join(errs, "\n"), tt.want) {
			t.Errorf("ipam %s: errors %q, want %q", tt.ipam, errs, tt.want)
		}
	}
}
