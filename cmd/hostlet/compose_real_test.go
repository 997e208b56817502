package main

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/template"
	yaml3 "go.yaml.in/yaml/v3"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/manifest/project"
)

// realCorpus is the folder of real-world Compose stacks, byte for byte
// from public repositories (SOURCE.md: origin and licence of each).
const realCorpus = "testdata/compose-real"

// realStack is one stack of the corpus: an app's folder and the Compose
// file its source names first.
type realStack struct {
	app, file string
}

// readRealStacks reads the stacks from SOURCE.md's table: the app (its
// folder) and the path in its repository, whose base name is the file.
func readRealStacks(t *testing.T) []realStack {
	t.Helper()
	f, err := os.Open(filepath.Join(realCorpus, "SOURCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stacks []realStack
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cols := strings.Split(strings.Trim(strings.TrimSpace(sc.Text()), "|"), "|")
		if len(cols) < 7 || strings.TrimSpace(cols[0]) == "app" || strings.HasPrefix(cols[0], "---") {
			continue
		}
		first, _, _ := strings.Cut(cols[2], ";")
		stacks = append(stacks, realStack{app: strings.TrimSpace(cols[0]), file: path.Base(strings.TrimSpace(first))})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stacks
}

// permissiveConfig is a host config that allows everything a pod may take
// of the host (the Docker socket stays unlisted unless socket: hostPathAllow
// "/" does not name it), with a compose.env value for every variable of the
// stack that has neither a default nor a value in the project's .env, and
// the devices and runtimes the stack names.
func permissiveConfig(t *testing.T, st realStack, socket bool) string {
	t.Helper()
	data, env := stackEnv(t, st)
	allow := []string{"/"}
	if socket {
		allow = append(allow, "/var/run/docker.sock", "/run/docker.sock")
	}
	policy := map[string]any{
		"privileged": true, "capabilities": []string{"ALL"}, "hostNetwork": true,
		"logDrivers": []string{"*"}, "externalVolumes": []string{"*"}, "externalNetworks": []string{"*"},
	}
	if devs, runtimes := stackHostThings(data); len(devs) > 0 || len(runtimes) > 0 {
		policy["devices"], policy["runtimes"] = devs, runtimes
	}
	b, err := yaml3.Marshal(map[string]any{
		"hostname": "corpus", "hostPathAllow": allow, "policy": policy,
		"compose": map[string]any{"helper": composetest.Helper(t), "env": env, "home": "/home/corpus"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, t.TempDir(), "hostlet.yaml", string(b))
}

// undefinedRefService is the service compose-go names when several refer
// to an undefined network or volume: the first of a map's iteration, so
// another from run to run; the golden file says "…".
var undefinedRefService = regexp.MustCompile(`service "[^"]*" refers to undefined`)

var (
	folderVar = regexp.MustCompile(`PATH|DIR|FOLDER|LOCATION|ROOT|VOLUME|STORAGE|LIBRARY|MEDIA|DOWNLOADS|BACKUP|CONFIG|^HOME$|_DATA$|^DATA`)
	ipVar     = regexp.MustCompile(`(^|_)IP($|_)|ADDR|(^|_)BIND$`)
	idVar     = regexp.MustCompile(`(^|_)(P?UID|P?GID)$`)
)

// stackEnv reads the stack's Compose file and gives a value to every
// variable that has neither a default nor a value in the project's .env.
func stackEnv(t *testing.T, st realStack) ([]byte, map[string]string) {
	t.Helper()
	dir := filepath.Join(realCorpus, st.app)
	data, err := os.ReadFile(filepath.Join(dir, st.file))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	_ = yaml3.Unmarshal(data, &top)
	dotEnv := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(dir, ".env")); err == nil {
		if m, err := dotenv.UnmarshalBytesWithLookup(b, nil); err == nil {
			dotEnv = m
		}
	}
	env := map[string]string{}
	vars := template.ExtractVariables(top, nil)
	for i, name := range slices.Sorted(maps.Keys(vars)) {
		v := vars[name]
		if _, set := dotEnv[name]; set || v.DefaultValue != "" && !v.Required {
			continue
		}
		env[name] = corpusValue(name, i)
	}
	return data, env
}

// corpusValue is the value a stack's variable gets, by what its name says
// it holds: a port (distinct per variable), an IP address, a read-only
// flag, a host folder, an id, a time
// zone, a version, a restart policy, or any word.
func corpusValue(name string, i int) string {
	n := strings.ToUpper(name)
	switch {
	case strings.Contains(n, "PORT"):
		return fmt.Sprint(20000 + i)
	case ipVar.MatchString(n):
		return "127.0.0.1"
	case strings.Contains(n, "READONLY") || strings.Contains(n, "READ_ONLY"):
		return "false"
	case folderVar.MatchString(n):
		return "/srv/corpus/" + strings.ToLower(name)
	case idVar.MatchString(n):
		return "1000"
	case n == "TZ" || strings.Contains(n, "TIMEZONE"):
		return "Etc/UTC"
	case strings.HasSuffix(n, "VERSION") || strings.HasSuffix(n, "TAG"):
		return "1.0"
	case strings.Contains(n, "RESTART"):
		return "unless-stopped"
	case strings.Contains(n, "URL"):
		return "https://corpus.example.com"
	case strings.Contains(n, "DOMAIN") || strings.Contains(n, "HOST"):
		return "corpus.example.com"
	}
	return "corpus-value"
}

// stackHostThings are the host devices a stack's services name (the part
// of a devices entry before the first colon), for policy.devices, and the
// runtimes they name, for policy.runtimes.
func stackHostThings(data []byte) (devices, runtimes []string) {
	var doc struct {
		Services map[string]struct {
			Devices []any  `yaml:"devices"`
			Runtime string `yaml:"runtime"`
		} `yaml:"services"`
	}
	_ = yaml3.Unmarshal(data, &doc)
	devs, rts := map[string]bool{}, map[string]bool{}
	for _, s := range doc.Services {
		for _, d := range s.Devices {
			if str, ok := d.(string); ok {
				host, _, _ := strings.Cut(str, ":")
				devs[host] = true
			}
		}
		if s.Runtime != "" {
			rts[s.Runtime] = true
		}
	}
	return slices.Sorted(maps.Keys(devs)), slices.Sorted(maps.Keys(rts))
}

// TestComposeRealCorpus runs `hostlet validate` on every stack of the
// real-world corpus, as a new user would: the permissive host config of
// permissiveConfig, the stack's folder (or its Compose file, when the
// file has a name of its own) as the source. A stack refused for the
// Docker socket (unlisted: refused, a safety decision kept) is validated
// again on a host that lists it. The outcome of every stack
// is compared with testdata/compose-real.golden (-update rewrites it);
// docs/compose.md gives the figure and the reason of every refusal.
func TestComposeRealCorpus(t *testing.T) {
	stacks := readRealStacks(t)
	if len(stacks) != 120 {
		t.Fatalf("corpus: %d stacks in SOURCE.md, want 120", len(stacks))
	}
	var out bytes.Buffer
	accepted, withSocket := 0, 0
	for _, st := range stacks {
		target := filepath.Join(realCorpus, st.app)
		if !project.IsProjectFile(st.file) {
			target = filepath.Join(target, st.file)
		}
		res := runCLI(t, "--config", permissiveConfig(t, st, false), "validate", target)
		if res.code == 0 {
			accepted++
		}
		if strings.Contains(res.stderr, "panic") {
			t.Errorf("%s: hostlet validate panicked:\n%s", st.app, res.stderr)
		}
		fmt.Fprintf(&out, "== %s (%s): exit %d\n%s\n", st.app, st.file, res.code, outcome(res))
		if strings.Contains(res.stdout, "(the Docker socket), which hostPathAllow does not list") {
			// The same on a host whose config lists the socket.
			res = runCLI(t, "--config", permissiveConfig(t, st, true), "validate", target)
			if res.code == 0 {
				withSocket++
			}
			fmt.Fprintf(&out, "== %s (%s), the Docker socket listed: exit %d\n%s\n", st.app, st.file, res.code, outcome(res))
		}
	}
	got := fmt.Sprintf("accepted: %d of %d (%d more where the host lists the Docker socket)\n\n%s", accepted, len(stacks), withSocket, out.String())
	testkit.GoldenLines(t, filepath.Join("testdata", "compose-real.golden"), strings.Split(strings.TrimSuffix(got, "\n"), "\n"), *update,
		fmt.Sprintf("the corpus's outcomes changed (accepted: %d of %d); rewrite the golden file with -update when the change is meant", accepted, len(stacks)))
}

// outcome is what `hostlet validate` printed, standard output then the
// lines of its standard error (a project Compose itself refuses is said
// there), each "stderr: ", with the random parts of Compose's texts
// left out.
func outcome(res cliResult) string {
	out := res.stdout
	for _, l := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		if l != "" {
			out += "stderr: " + l + "\n"
		}
	}
	return undefinedRefService.ReplaceAllString(out, `service "…" refers to undefined`)
}
