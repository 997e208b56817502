package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/composetest"
)

// interpolatedCase is a Compose service whose key takes a value from the
// project's .env or the host's compose.env that hostlet (not compose-go)
// rejects: the error names the key, never the value.
type interpolatedCase struct {
	name string
	// service is the service's body (indented by 4), with ${V}.
	service string
	// value is V's value; fromHost: given in the host's compose.env, not
	// in the project's .env.
	value    string
	fromHost bool
	// field is what the error names.
	field string
	// parts are pieces of value that must not show either.
	parts []string
}

// interpolatedCases cover every key the issue names and the others hostlet
// checks itself, with values long and short.
var interpolatedCases = []interpolatedCase{
	{name: "stop-signal", service: "stop_signal: ${V}", value: "SIGhunter2pw", field: "stop_signal"},
	{name: "stop-signal-short", service: "stop_signal: ${V}", value: "zq", field: "stop_signal"},
	{name: "stop-signal-host", service: "stop_signal: ${V}", value: "SIGhostpw9", fromHost: true, field: "stop_signal"},
	{name: "cap-add", service: "cap_add: [\"${V}\"]", value: "HUNTER2_SECRET_CAP", field: "cap_add[0]"},
	{name: "cap-add-refused", service: "cap_add: [\"${V}\"]", value: "SYS_PTRACE", field: "cap_add[0]"},
	{name: "cap-add-short", service: "cap_add: [\"${V}\"]", value: "Q9", field: "cap_add[0]"},
	{name: "devices", service: "devices: [\"${V}:/dev/xvdz\"]", value: "/dev/hunter2secret", field: "devices[0]"},
	{name: "devices-whole", service: "devices: [\"${V}\"]", value: "/dev/hunter3sec:/dev/xvdq:rwm", field: "devices[0]", parts: []string{"/dev/hunter3sec", "/dev/xvdq"}},
	{name: "devices-host", service: "devices: [\"${V}\"]", value: "/dev/hostsecretdev", fromHost: true, field: "devices[0]"},
	{name: "image", service: "image: ${V}", value: "Hunter2Secret/Image", field: "image"},
	{name: "image-short", service: "image: ${V}", value: "Xy", field: "image"},
	{name: "working-dir", service: "working_dir: ${V}", value: "relative/hunter2secret", field: "working_dir"},
	{name: "working-dir-short", service: "working_dir: ${V}", value: "w7", field: "working_dir"},
	{name: "dns", service: "dns: [\"${V}\"]", value: "hunter2.secret.example", field: "dns[0]"},
	{name: "dns-short", service: "dns: [\"${V}\"]", value: "d8", field: "dns[0]"},
	{name: "user", service: "user: \"${V}\"", value: "hunter2 secret", field: "user"},
	{name: "user-host", service: "user: \"${V}\"", value: "host user secret", fromHost: true, field: "user"},
	{name: "dns-search", service: "dns_search: [\"${V}\"]", value: "Hunter2_Secret!", field: "dns_search[0]"},
	{name: "security-opt", service: "security_opt: [\"${V}\"]", value: "hunter2-secret-opt", field: "security_opt[0]"},
	{name: "logging-driver", service: "logging: {driver: \"${V}\"}", value: "hunter2driver", field: "logging"},
	{name: "restart-short", service: "restart: ${V}", value: "rq", field: "restart"},
	{name: "network-mode", service: "network_mode: ${V}", value: "hunter2-net-mode", field: "network_mode"},
	{name: "environment-name", service: "environment: [\"${V}=x\"]", value: "hunter2 secret name", field: "environment"},
	{name: "label-key", service: "labels: [\"${V}=x\"]", value: "io.hostlet.hunter2secret", field: "labels"},
	{name: "sysctl-key", service: "sysctls: [\"${V}=1\"]", value: "hunter2.secret.sysctl", field: "sysctls"},
	{name: "ulimit-short", service: "ulimits: {nofile: {soft: 10, hard: 20}}\n    cap_drop: [\"${V}\"]", value: "Z5", field: "cap_drop[0]"},
}

// writeInterpolatedProjects writes one project per case under root (the
// project's .env holding its V) and returns the host config (compose.env
// holding the host cases' values, each under its own name).
func writeInterpolatedProjects(t *testing.T, root string, helper string) string {
	t.Helper()
	var hostEnv []string
	for _, c := range interpolatedCases {
		variable := "V"
		service := c.service
		if c.fromHost {
			variable = "HOST_" + strings.ReplaceAll(strings.ToUpper(c.name), "-", "_")
			service = strings.ReplaceAll(service, "${V}", "${"+variable+"}")
			hostEnv = append(hostEnv, fmt.Sprintf("%s: %q", variable, c.value))
		} else {
			writeFile(t, root, c.name+"/.env", fmt.Sprintf("V='%s'\n", c.value))
		}
		image := "image: busybox:1.36\n    "
		if strings.HasPrefix(service, "image:") {
			image = ""
		}
		writeFile(t, root, c.name+"/compose.yaml", fmt.Sprintf("services:\n  web:\n    %s%s\n", image, service))
	}
	return writeFile(t, t.TempDir(), "hostlet.yaml", fmt.Sprintf("hostname: hidden\ncompose:\n  helper: %s\n  env: {%s}\n", helper, strings.Join(hostEnv, ", ")))
}

// mustHideInterpolated fails when out shows any case's value (or a part
// of it), and when it does not name each case's project and key.
func mustHideInterpolated(t *testing.T, what, out string, named bool) {
	t.Helper()
	for _, c := range interpolatedCases {
		for _, v := range append([]string{c.value}, c.parts...) {
			if strings.Contains(out, v) {
				t.Errorf("%s: case %s: shows the interpolated value %q:\n%s", what, c.name, v, linesWith(out, v))
			}
		}
		if named && !strings.Contains(out, c.name+"/compose.yaml") {
			t.Errorf("%s: case %s: no error names the project's file:\n%s", what, c.name, out)
		}
	}
}

// linesWith are the lines of out holding s.
func linesWith(out, s string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestInterpolatedValuesNeverInValidateOutput: a value from a project's
// .env or the host's compose.env that lands in a key hostlet rejects is
// not quoted by `hostlet validate` (text and JSON), however short; the
// error names the file and the key.
func TestInterpolatedValuesNeverInValidateOutput(t *testing.T) {
	root := t.TempDir()
	cfg := writeInterpolatedProjects(t, root, composetest.Helper(t))
	for _, format := range []string{"text", "json"} {
		res := runCLI(t, "--config", cfg, "validate", "-o", format, root)
		if res.code != 1 {
			t.Fatalf("validate -o %s: exit %d, want 1:\n%s%s", format, res.code, res.stdout, res.stderr)
		}
		if testing.Verbose() {
			t.Logf("validate -o %s:\n%s", format, res.stdout)
		}
		mustHideInterpolated(t, "validate -o "+format, res.stdout+res.stderr, true)
		if format == "text" {
			for _, c := range interpolatedCases {
				if !strings.Contains(linesWith(res.stdout, filepath.ToSlash(c.name+"/compose.yaml")), c.field) {
					t.Errorf("case %s: no error names %s:\n%s", c.name, c.field, linesWith(res.stdout, c.name+"/"))
				}
			}
		}
	}
}
