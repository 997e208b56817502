//go:build sidebyside

package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	yaml3 "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/manifest/project"
)

// sideBySideStacks are the ten most used stacks of the corpus that
// hostlet accepts unmodified: the official self-hosting files of the
// best-known projects, first in SOURCE.md.
var sideBySideStacks = []string{
	"nextcloud-apache", "paperless-ngx", "n8n", "uptime-kuma", "searxng",
	"netbox", "mattermost", "zammad", "docker-mailserver", "taiga",
}

// TestComposeSideBySide starts each stack with Debian's docker-compose
// (1.29) and with hostlet, from the same file and variables, on the real
// engine, and compares what `docker inspect` shows of each service's
// container: environment, mounts, published ports, networks, restart
// policy, labels. Images are the test image tagged under the stacks'
// names (no registry is reached): the containers need only be created
// and started. The differences go to testdata/compose-sidebyside.golden
// (-update rewrites it). Slow, so built only with the sidebyside tag
// (make sidebyside, in .ci/run).
func TestComposeSideBySide(t *testing.T) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Fatalf("docker-compose (Debian's package) is needed: %v", err)
	}
	cli := dockertest.Client(t)
	byApp := map[string]realStack{}
	for _, st := range readRealStacks(t) {
		byApp[st.app] = st
	}
	var out strings.Builder
	for _, app := range sideBySideStacks {
		st := byApp[app]
		fmt.Fprintf(&out, "== %s (%s)\n", st.app, st.file)
		compose := composeSide(t, cli, st)
		hostlet := hostletSide(t, cli, st, len(compose))
		for _, line := range compareSides(compose, hostlet) {
			fmt.Fprintln(&out, line)
		}
	}
	testkit.GoldenLines(t, filepath.Join("testdata", "compose-sidebyside.golden"), strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), *update,
		"the side-by-side comparison changed; rewrite the golden file with -update when the change is meant")
}

// sideProject is the project name both sides use.
const sideProject = "sidebyside"

// stackCopy copies the stack's folder to a folder named sideProject (the
// project name hostlet takes from it) and returns it.
func stackCopy(t *testing.T, st realStack) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), sideProject)
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(realCorpus, st.app))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// tagImages tags the test image under every image the stack names
// (resolved by docker-compose config), removed at the end of the test.
func tagImages(t *testing.T, cli *client.Client, dir, file string, env []string) {
	t.Helper()
	cmd := exec.Command("docker-compose", "-p", sideProject, "-f", file, "config")
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("docker-compose config: %v\n%s", err, b)
	}
	var cfg struct {
		Services map[string]struct{ Image string } `yaml:"services"`
	}
	if err := yaml3.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	img := dockertest.TestImage(t)
	for _, s := range cfg.Services {
		ref := s.Image
		if ref == "" || strings.Contains(ref, "@") {
			continue
		}
		if !strings.Contains(ref[strings.LastIndex(ref, "/")+1:], ":") {
			ref += ":latest"
		}
		if err := cli.ImageTag(t.Context(), img, ref); err != nil {
			t.Fatalf("tag %s: %v", ref, err)
		}
		t.Cleanup(func() { _, _ = cli.ImageRemove(context.Background(), ref, image.RemoveOptions{}) })
	}
}

// composeSide runs the stack with docker-compose up -d and returns its
// services' containers, then takes it down (volumes too).
func composeSide(t *testing.T, cli *client.Client, st realStack) map[string]container.InspectResponse {
	t.Helper()
	dir := stackCopy(t, st)
	_, vars := stackEnv(t, st)
	env := os.Environ()
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	tagImages(t, cli, dir, st.file, env)
	run := func(args ...string) error {
		cmd := exec.Command("docker-compose", append([]string{"-p", sideProject, "-f", st.file}, args...)...)
		cmd.Dir, cmd.Env = dir, env
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("docker-compose %v: %w\n%s", args, err, b)
		}
		return nil
	}
	// A container the test image cannot start (its command is not in
	// it) is made all the same: what is compared is the create.
	if err := run("up", "-d", "--no-build"); err != nil {
		t.Logf("%s: %v", st.app, err)
	}
	got := inspectBy(t, cli, filters.NewArgs(filters.Arg("label", "com.docker.compose.project="+sideProject)))
	if err := run("down", "-v", "--remove-orphans"); err != nil {
		t.Fatal(err)
	}
	return got
}

// hostletSide runs the stack with hostlet run --once from a file source
// with the same variables, once more while a dependency keeps a service
// waiting (at most 10 times, until it made want containers), and returns
// its services' containers, then removes what it made.
func hostletSide(t *testing.T, cli *client.Client, st realStack, want int) map[string]container.InspectResponse {
	t.Helper()
	dir := stackCopy(t, st)
	instance := dockertest.Instance(t)
	_, vars := stackEnv(t, st)
	// The folder holding the project, or the Compose file itself when it
	// has a name of its own (as the corpus test gives it).
	source := filepath.Dir(dir)
	if !project.IsProjectFile(st.file) {
		source = filepath.Join(dir, st.file)
	}
	b, err := yaml3.Marshal(map[string]any{
		"hostname": "sidebyside", "instance": instance, "stateDir": filepath.Join(t.TempDir(), "state"),
		"listen": fmt.Sprintf("127.0.0.1:%d", testkit.FreePort(t)), "hostPathAllow": []string{"/"},
		// A Compose service is a pod of one container: no infra container.
		"docker":  map[string]any{"infraImage": dockertest.TestImage(t)},
		"policy":  map[string]any{"privileged": true, "capabilities": []string{"ALL"}, "hostNetwork": true, "logDrivers": []string{"*"}},
		"compose": map[string]any{"env": vars, "helper": composetest.Helper(t)},
		"sources": []map[string]any{{"name": "side", "type": "file", "path": source}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := writeFile(t, t.TempDir(), "hostlet.yaml", string(b))
	var got map[string]container.InspectResponse
	for range 10 {
		res := runCLI(t, "run", "--config", cfg, "--once")
		if got = inspectBy(t, cli, filters.NewArgs(filters.Arg("label", "io.hostlet.instance="+instance))); len(got) >= want {
			break
		}
		t.Logf("%s: hostlet run --once: %d of %d containers (exit %d)", st.app, len(got), want, res.code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := dockertest.RemoveInstance(ctx, cli, instance); err != nil {
		t.Error(err)
	}
	return got
}

// inspectBy inspects the containers f lists, by their Compose service.
func inspectBy(t *testing.T, cli *client.Client, f filters.Args) map[string]container.InspectResponse {
	t.Helper()
	list, err := cli.ContainerList(t.Context(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]container.InspectResponse{}
	for _, c := range list {
		svc := c.Labels["com.docker.compose.service"]
		if svc == "" {
			continue // hostlet's infra containers
		}
		r, err := cli.ContainerInspect(t.Context(), c.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[svc] = r
	}
	return out
}

// compareSides lists, per service, what differs between docker-compose's
// container and hostlet's.
func compareSides(compose, hostlet map[string]container.InspectResponse) []string {
	var out []string
	for _, svc := range slices.Sorted(maps.Keys(compose)) {
		c, ok := hostlet[svc]
		if !ok {
			out = append(out, svc+": no container made by hostlet")
			continue
		}
		for _, d := range serviceDiffs(compose[svc], c) {
			out = append(out, svc+": "+d)
		}
	}
	for _, svc := range slices.Sorted(maps.Keys(hostlet)) {
		if _, ok := compose[svc]; !ok {
			out = append(out, svc+": no container made by docker-compose")
		}
	}
	if len(out) == 0 {
		out = append(out, "(the same)")
	}
	return out
}

// serviceDiffs compares one service's containers, docker-compose's (a) and
// hostlet's (b), field by field.
func serviceDiffs(a, b container.InspectResponse) []string {
	var out []string
	add := func(what string, x, y []string) {
		onlyA, onlyB := setDiff(x, y), setDiff(y, x)
		if len(onlyA)+len(onlyB) > 0 {
			out = append(out, fmt.Sprintf("%s: docker-compose only %v, hostlet only %v", what, onlyA, onlyB))
		}
	}
	add("env", envOf(a), envOf(b))
	add("mounts", mountsOf(a), mountsOf(b))
	add("ports", portsOf(a), portsOf(b))
	add("networks", networksOf(a), networksOf(b))
	add("restart", []string{restartOf(a)}, []string{restartOf(b)})
	add("labels", labelKeys(a), labelKeys(b))
	add("command", append(slices.Clone(a.Config.Entrypoint), a.Config.Cmd...), append(slices.Clone(b.Config.Entrypoint), b.Config.Cmd...))
	add("user/workdir", []string{"user=" + a.Config.User, "workdir=" + a.Config.WorkingDir}, []string{"user=" + b.Config.User, "workdir=" + b.Config.WorkingDir})
	return out
}

// envOf is a container's environment; an entry without a value (what
// docker-compose 1.29 gives for a name it did not find) is marked so.
func envOf(r container.InspectResponse) []string {
	var out []string
	for _, e := range r.Config.Env {
		if !strings.Contains(e, "=") {
			e += " (no value)"
		}
		out = append(out, e)
	}
	return out
}

// restartOf is a container's restart policy, "no" when unset.
func restartOf(r container.InspectResponse) string {
	return cmp.Or(string(r.HostConfig.RestartPolicy.Name), "no")
}

// mountsOf are a container's mounts as target(type,rw): the sources are
// each side's own (a project folder, hostlet's copies and data folders).
func mountsOf(r container.InspectResponse) []string {
	var out []string
	for _, m := range r.Mounts {
		mode := "ro"
		if m.RW {
			mode = "rw"
		}
		kind := string(m.Type)
		if m.Type == "volume" && strings.HasPrefix(m.Name, "hostlet_") {
			kind = "volume(pod's)"
		}
		out = append(out, fmt.Sprintf("%s(%s,%s)", m.Destination, kind, mode))
	}
	return out
}

// portsOf are a container's published ports as container port -> host
// address (host ports the engine picks shown as "random").
func portsOf(r container.InspectResponse) []string {
	var out []string
	for p, bs := range r.HostConfig.PortBindings {
		for _, b := range bs {
			host := b.HostPort
			if host == "" || host == "0" {
				host = "random"
			}
			out = append(out, fmt.Sprintf("%s->%s:%s", p, b.HostIP, host))
		}
	}
	return out
}

// networksOf are the container's networks with its aliases there, its
// network mode when it joins another container's.
func networksOf(r container.InspectResponse) []string {
	if r.HostConfig.NetworkMode.IsContainer() {
		return []string{"joins another container's network namespace"}
	}
	var out []string
	for name, ep := range r.NetworkSettings.Networks {
		name = strings.TrimPrefix(name, sideProject+"_")
		aliases := slices.DeleteFunc(slices.Clone(ep.Aliases), func(a string) bool { return len(a) == 12 || strings.HasPrefix(a, "hostlet_") })
		sort.Strings(aliases)
		out = append(out, name+strings.Join(aliases, ","))
	}
	return out
}

// labelKeys are the keys of a container's labels (values differ by
// design: hashes, versions).
func labelKeys(r container.InspectResponse) []string {
	return slices.Sorted(maps.Keys(r.Config.Labels))
}

// setDiff are the members of a not in b, sorted.
func setDiff(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}
