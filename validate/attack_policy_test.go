package validate_test

// Attacks on the host-access policy (outside review). Every test here
// fails on b96de44: each failure is a finding.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

// attackCheck validates m under policy p and reports whether it was
// refused.
func attackCheck(t *testing.T, m manifest.Manifest, p validate.Policy) error {
	t.Helper()
	return validate.Manifest(sourced("s", "web.yaml", 0, m), validate.Options{Policy: p})
}

// The policy says apparmor=unconfined lifts confinement and needs
// policy.privileged, yet apparmor=<any profile name> is always allowed.
// A host's own profiles include unconfined ones: Ubuntu 24.04 ships
// dozens declared `flags=(unconfined)` (runc, crun, podman, buildah,
// code, chrome, ...), and lxc installs lxc-container-default-with-nesting
// (mount allowed). Naming one is apparmor=unconfined under another name.
func TestAttackPolicyAppArmorProfileIsUnconfined(t *testing.T) {
	for _, prof := range []string{"runc", "crun", "podman", "lxc-container-default-with-nesting"} {
		t.Run(prof, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].SecurityOpt = []string{"apparmor=" + prof}
			if err := attackCheck(t, m, validate.Policy{}); err == nil {
				t.Errorf("securityOpt apparmor=%s accepted with an empty policy: any host profile (unconfined ones included) is the pod's to pick; only docker-default or profiles the policy lists should be", prof)
			}
		})
	}
}

// capAdd SYS_NICE needs policy.capabilities, but ulimits rtprio gives the
// same power without it: RLIMIT_RTPRIO lets an unprivileged process take
// SCHED_FIFO/SCHED_RR up to that priority (sched_setscheduler(2)), and
// RLIMIT_NICE lets it raise its nice value to -20. A real-time busy loop
// on every CPU leaves the host 5% of each (sched_rt_runtime_us) and is
// not bounded by the pod's CPU limit (cpu.max throttles CFS only).
func TestAttackPolicyUlimitsGrantSysNice(t *testing.T) {
	for _, u := range []manifest.Ulimit{
		{Name: "rtprio", Soft: 99, Hard: 99},
		{Name: "rtprio", Soft: -1, Hard: -1},
		{Name: "nice", Soft: 40, Hard: 40},
	} {
		t.Run(u.Name, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Ulimits = []manifest.Ulimit{u}
			if err := attackCheck(t, m, validate.Policy{}); err == nil {
				t.Errorf("ulimit %s=%d:%d accepted with an empty policy: it grants what capAdd SYS_NICE (refused) would", u.Name, u.Soft, u.Hard)
			}
		})
	}
}

// Log drivers run in the engine, on the host, as root: any driver and any
// option is allowed with an empty policy. The engine then writes the
// container's output where the author says, from the host's network
// namespace and file system:
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
func TestAttackPolicyLogDriverReachesHost(t *testing.T) {
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
	}
	for name, l := range tests {
		t.Run(name, func(t *testing.T) {
			m := pod("web")
			m.Containers[0].Logging = l
			if err := attackCheck(t, m, validate.Policy{}); err == nil {
				t.Errorf("logging %s %v accepted with an empty policy: a log driver and its options reach the host (only json-file/local/journald/none with their size options should be free)", l.Driver, l.Options)
			}
		})
	}
}

// The validator refuses net.* sysctls on the host's network ("they would
// be the host's") but not the IPC ones in the host's IPC namespace:
// kernel.shmmax with hostIPC would be the host's. runc refuses it at
// start, so the pod is accepted and then never starts (restart loop)
// instead of being refused naming the field.
func TestAttackPolicyIPCSysctlOnHostIPC(t *testing.T) {
	for _, k := range []string{"kernel.shmmax", "kernel.sem", "fs.mqueue.msg_max"} {
		t.Run(k, func(t *testing.T) {
			m := pod("web")
			m.HostIPC = true
			m.Containers[0].Sysctls = map[string]string{k: "1"}
			if err := attackCheck(t, m, validate.Policy{HostNetwork: true}); err == nil {
				t.Errorf("sysctl %s accepted in the host's IPC namespace: it would be the host's", k)
			}
		})
	}
}

// Docker applies security options in order, the last of a key winning
// (no-new-privileges=true then =false: off), while the spec hash sorts
// them: two options of one key are accepted, and swapping them changes
// the container but not its hash, so the change is never applied.
func TestAttackPolicySecurityOptDuplicateKey(t *testing.T) {
	m := pod("web")
	m.Containers[0].SecurityOpt = []string{"no-new-privileges=true", "no-new-privileges=false"}
	if err := attackCheck(t, m, validate.Policy{}); err == nil {
		t.Errorf("securityOpt %v accepted: the last one wins in Docker, but the hash ignores the order", m.Containers[0].SecurityOpt)
	}
}

// The stateDir check compares a host path with resolvePath(stateDir), which
// walks from "/" whatever the path: a relative stateDir (the quickstart's
// ".hostlet-state", relative to where hostlet runs) is checked as
// /.hostlet-state, and the real folder, with hostlet's keys and the files
// every pod mounts, is a pod's to mount read-write.
func TestAttackPolicyRelativeStateDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, ".hostlet-state")
	if err := os.MkdirAll(filepath.Join(state, "files"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, p := range []string{state, filepath.Join(state, "files"), dir} {
		got, err := validate.HostPath(p, validate.Options{HostPathAllow: []string{dir}, StateDir: ".hostlet-state"})
		if err == nil {
			t.Errorf("HostPath(%q) = %q allowed with stateDir .hostlet-state (that is %s): it is, or holds, hostlet's stateDir", p, got, state)
		} else if !strings.Contains(err.Error(), "stateDir") {
			t.Errorf("HostPath(%q): %v, want the stateDir refusal", p, err)
		}
	}
}
