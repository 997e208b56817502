package runtime

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/go-connections/nat"
)

func TestExitCodeFromStatus(t *testing.T) {
	for status, want := range map[string]int{
		"Exited (137) 2 seconds ago":    137,
		"Exited (0) About a minute ago": 0,
		"Exited (-1) 1 hour ago":        -1,
		"Up 3 seconds":                  0,
		"Created":                       0,
		"Exited (x) now":                0,
		"":                              0,
	} {
		if got := exitCodeFromStatus(status); got != want {
			t.Errorf("exitCodeFromStatus(%q) = %d, want %d", status, got, want)
		}
	}
}

func TestTranslate(t *testing.T) {
	notFound := fmt.Errorf("engine: %w", cerrdefs.ErrNotFound)
	if err := translate(notFound); !IsNotFound(err) || !errors.Is(err, cerrdefs.ErrNotFound) || err.Error() != notFound.Error() {
		t.Errorf("translate(not found) = %v: want ErrNotFound, the original error and its text", err)
	}
	if err := translate(cerrdefs.ErrConflict); !IsConflict(err) || IsNotFound(err) {
		t.Errorf("translate(conflict) = %v: want ErrConflict only", err)
	}
	if err := translate(cerrdefs.ErrAlreadyExists); !IsConflict(err) {
		t.Errorf("translate(already exists) = %v: want ErrConflict", err)
	}
	plain := errors.New("boom")
	if err := translate(plain); err != plain {
		t.Errorf("translate(plain) = %v, want it unchanged", err)
	}
	if translate(nil) != nil {
		t.Error("translate(nil) != nil")
	}
	// Wrapping keeps the classes.
	pull := fmt.Errorf("pull image x: %w", classify(translate(notFound), ErrImagePull))
	if !errors.Is(pull, ErrImagePull) || !IsNotFound(pull) {
		t.Errorf("wrapped pull error %v lost a class", pull)
	}
	if !strings.HasPrefix(pull.Error(), "pull image x: engine: ") {
		t.Errorf("pull error text = %q", pull.Error())
	}
}

func TestDockerConfig(t *testing.T) {
	spec := ContainerSpec{
		Name:        "hostlet_web_app_1",
		Image:       "example.org/web:1",
		Command:     []string{"/web", "--port=8080"},
		Env:         []string{"A=1"},
		WorkingDir:  "/app",
		Labels:      map[string]string{LabelManaged: "true"},
		Ports:       []Port{{ContainerPort: 8080, HostPort: 18080, Protocol: "TCP", HostIP: "127.0.0.1"}, {ContainerPort: 53, Protocol: "udp"}},
		Mounts:      []Mount{{Type: MountVolume, Source: "vol", Target: "/data"}, {Type: MountBind, Source: "/srv", Target: "/srv", ReadOnly: true}},
		Memory:      64 << 20,
		CPUShares:   512,
		StopTimeout: 1500 * time.Millisecond,
	}
	for policy, want := range map[string]container.RestartPolicyMode{
		"": container.RestartPolicyDisabled, RestartNo: container.RestartPolicyDisabled,
		RestartAlways: container.RestartPolicyAlways, RestartOnFailure: container.RestartPolicyOnFailure,
	} {
		spec.RestartPolicy = policy
		_, hc, err := dockerConfig(spec)
		if err != nil {
			t.Fatal(err)
		}
		if hc.RestartPolicy != (container.RestartPolicy{Name: want}) {
			t.Errorf("restart policy %q -> %+v, want %s", policy, hc.RestartPolicy, want)
		}
	}
	cfg, hc, err := dockerConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual([]string(cfg.Entrypoint), spec.Command) || cfg.Cmd != nil {
		t.Errorf("command -> Entrypoint %v Cmd %v; want Entrypoint = command, no Cmd", cfg.Entrypoint, cfg.Cmd)
	}
	if cfg.StopTimeout == nil || *cfg.StopTimeout != 2 {
		t.Errorf("StopTimeout = %v, want 2 (1.5 s rounded up)", cfg.StopTimeout)
	}
	wantPorts := nat.PortMap{"8080/tcp": {{HostIP: "127.0.0.1", HostPort: "18080"}}}
	if !reflect.DeepEqual(hc.PortBindings, wantPorts) {
		t.Errorf("PortBindings = %v, want %v", hc.PortBindings, wantPorts)
	}
	if len(cfg.ExposedPorts) != 2 {
		t.Errorf("ExposedPorts = %v, want 8080/tcp and 53/udp", cfg.ExposedPorts)
	}
	if hc.Memory != 64<<20 || hc.MemorySwap != 64<<20 || hc.CPUShares != 512 {
		t.Errorf("resources = %+v", hc.Resources)
	}
	if len(hc.Mounts) != 2 || hc.Mounts[0].Type != "volume" || hc.Mounts[1].Type != "bind" || !hc.Mounts[1].ReadOnly {
		t.Errorf("mounts = %+v", hc.Mounts)
	}

	spec.Args = []string{"-v", "serve"}
	if cfg, _, err := dockerConfig(spec); err != nil {
		t.Fatal(err)
	} else if !reflect.DeepEqual([]string(cfg.Entrypoint), spec.Command) || !reflect.DeepEqual([]string(cfg.Cmd), spec.Args) {
		t.Errorf("command and args -> Entrypoint %v Cmd %v; want Entrypoint = command, Cmd = args", cfg.Entrypoint, cfg.Cmd)
	}
	spec.Command = nil
	if cfg, _, err := dockerConfig(spec); err != nil {
		t.Fatal(err)
	} else if cfg.Entrypoint != nil || !reflect.DeepEqual([]string(cfg.Cmd), spec.Args) {
		t.Errorf("args alone -> Entrypoint %v Cmd %v; want the image's entrypoint, Cmd = args", cfg.Entrypoint, cfg.Cmd)
	}
	spec.Args = nil
	spec.NetworkMode = "container:abc"
	spec.StopTimeout = 0
	cfg, hc, err = dockerConfig(spec)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Entrypoint != nil || cfg.StopTimeout != nil {
		t.Errorf("no command/timeout -> Entrypoint %v StopTimeout %v; want image defaults", cfg.Entrypoint, cfg.StopTimeout)
	}
	if cfg.ExposedPorts != nil || hc.PortBindings != nil || cfg.Hostname != "" {
		t.Errorf("container network mode still sets ports/hostname: %v %v %q", cfg.ExposedPorts, hc.PortBindings, cfg.Hostname)
	}

	spec.RestartPolicy = "sometimes"
	if _, _, err := dockerConfig(spec); err == nil {
		t.Error("unknown restart policy accepted")
	}
	spec.RestartPolicy = ""
	spec.Mounts = []Mount{{Type: "tmpfs", Target: "/x"}}
	if _, _, err := dockerConfig(spec); err == nil {
		t.Error("unknown mount type accepted")
	}
}

func TestRegistryAuth(t *testing.T) {
	dir := t.TempDir()
	if got, err := registryAuth(dir, "example.org"); got != "" || err != nil {
		t.Fatalf("no config file: %q, %v; want no auth, no error", got, err)
	}
	cfg := map[string]any{"auths": map[string]any{
		"https://index.docker.io/v1/": map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("hub:hubpw"))},
		"registry.example.org:5000":   map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("me:p:w"))},
	}}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for domain, want := range map[string]registry.AuthConfig{
		"docker.io":                 {Username: "hub", Password: "hubpw", ServerAddress: "https://index.docker.io/v1/"},
		"registry.example.org:5000": {Username: "me", Password: "p:w", ServerAddress: "registry.example.org:5000"},
		"registry.example.org":      {},
		"other.example.org":         {},
	} {
		enc, err := registryAuth(dir, domain)
		if err != nil {
			t.Fatalf("%s: %v", domain, err)
		}
		if want == (registry.AuthConfig{}) {
			if enc != "" {
				t.Errorf("%s: got credentials %q, want none", domain, enc)
			}
			continue
		}
		got, err := registry.DecodeAuthConfig(enc)
		if err != nil {
			t.Fatalf("%s: decode %q: %v", domain, enc, err)
		}
		if *got != want {
			t.Errorf("%s: auth = %+v, want %+v", domain, *got, want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := registryAuth(dir, "docker.io"); err == nil {
		t.Error("broken config.json: no error")
	}
}

func TestReadJSONStream(t *testing.T) {
	ok := `{"status":"Pulling"}` + "\n" + `{"status":"Done"}`
	if err := readJSONStream(strings.NewReader(ok)); err != nil {
		t.Errorf("clean stream: %v", err)
	}
	bad := `{"status":"Pulling"}{"errorDetail":{"message":"manifest unknown"},"error":"manifest unknown"}{"status":"x"}`
	if err := readJSONStream(strings.NewReader(bad)); err == nil || err.Error() != "manifest unknown" {
		t.Errorf("stream with error: %v, want manifest unknown", err)
	}
	if err := readJSONStream(strings.NewReader(`{"status":`)); err == nil {
		t.Error("truncated stream: no error")
	}
}

func TestToEvent(t *testing.T) {
	ev := toEvent(events.Message{
		Action:   "die",
		Actor:    events.Actor{ID: "abc", Attributes: map[string]string{"exitCode": "3", LabelPod: "web"}},
		TimeNano: 1_700_000_000_123_456_789,
	})
	if ev.Action != "die" || ev.ContainerID != "abc" || ev.ExitCode != 3 || ev.Labels[LabelPod] != "web" ||
		!ev.Time.Equal(time.Unix(0, 1_700_000_000_123_456_789)) {
		t.Errorf("toEvent = %+v", ev)
	}
}

// TestSystemPathsUnconfinedSentAsEmptyMasks: systempaths=unconfined is a
// docker CLI option, not the engine's: the CLI turns it into empty
// MaskedPaths and ReadonlyPaths and never sends it; the daemon's
// parseSecurityOpt answers `invalid --security-opt 2:
// "systempaths=unconfined"`. Validation accepts it (with
// policy.privileged), so passed through as it is, the pod would fail to
// create every sync.
func TestSystemPathsUnconfinedSentAsEmptyMasks(t *testing.T) {
	_, hc, err := dockerConfig(ContainerSpec{Name: "x", Image: "example.org/app:1", SecurityOpt: []string{"systempaths=unconfined"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(hc.SecurityOpt, "systempaths=unconfined") {
		t.Errorf("HostConfig.SecurityOpt %v sends systempaths=unconfined to the engine, which refuses it; want MaskedPaths and ReadonlyPaths empty (non-nil) instead", hc.SecurityOpt)
	}
	if hc.MaskedPaths == nil || hc.ReadonlyPaths == nil {
		t.Errorf("MaskedPaths %v, ReadonlyPaths %v: want empty, non-nil", hc.MaskedPaths, hc.ReadonlyPaths)
	}
}
