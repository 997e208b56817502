package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
)

func TestMain(m *testing.M) {
	if rssChild() {
		return
	}
	dockertest.Main(m)
}

// update rewrites the golden files under testdata from what the tests got.
// Review the result (git diff) before committing it.
var update = flag.Bool("update", false, "rewrite testdata golden files")

// cliResult is one hostlet command run in this process.
type cliResult struct {
	code   int
	stdout string
	// stderr is what the command printed to its error stream, and the
	// error line main prints ("hostlet: ...").
	stderr string
}

// runCLI runs hostlet with args in this process, as main does, and returns
// its exit code and output.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := newRootCommand()
	var stdout, stderr bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	err := cmd.ExecuteContext(ctx)
	// The exit code and error line main would give.
	code := exitCodeTo(&stderr, err)
	return cliResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// writeFile writes content to dir/rel, making folders.
func writeFile(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gitRepo is a git working tree driven by the git CLI, with no user or
// system configuration (HOME in a temp folder, GIT_CONFIG_NOSYSTEM=1).
type gitRepo struct {
	t   *testing.T
	dir string
	env []string
}

func newGitRepo(t *testing.T, dir string) *gitRepo {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Hostlet Test", "GIT_AUTHOR_EMAIL=test@hostlet.invalid",
		"GIT_COMMITTER_NAME=Hostlet Test", "GIT_COMMITTER_EMAIL=test@hostlet.invalid")
	r := &gitRepo{t: t, dir: dir, env: env}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r.git("init", "--quiet", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit stages everything and commits; it returns the commit's SHA.
func (r *gitRepo) commit(msg string) string {
	r.t.Helper()
	r.git("add", "--all")
	r.git("commit", "--quiet", "--allow-empty", "--no-gpg-sign", "-m", msg)
	return r.git("rev-parse", "HEAD")
}

// golden compares got with testdata/name after replacing each value of
// vars (longest first) by its key, so that temp paths and commit SHAs do
// not make the files change from run to run. With -update it writes the
// file instead.
func golden(t *testing.T, name, got string, vars map[string]string) {
	t.Helper()
	norm := got
	for _, kv := range sortedByValueLength(vars) {
		norm = strings.ReplaceAll(norm, kv[1], kv[0])
	}
	path := filepath.Join("testdata", name)
	if *update {
		writeFile(t, ".", path, norm)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run the test with -update to write it, then review it)", err)
	}
	if norm != string(want) {
		t.Errorf("%s differs from what hostlet printed.\n--- got (normalised):\n%s\n--- want:\n%s", path, norm, want)
	}
}

func sortedByValueLength(vars map[string]string) [][2]string {
	var out [][2]string
	for k, v := range vars {
		if v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	// Longest value first: a full SHA before its short form.
	slices.SortFunc(out, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(len(b[1]), len(a[1])), cmp.Compare(a[0], b[0]))
	})
	return out
}

// mustNotContain fails when any output holds secret.
func mustNotContain(t *testing.T, what, out string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%s contains the env value %q:\n%s", what, s, out)
		}
	}
}
