package gitsource_test

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	"github.com/hostlet/hostlet/sources"
)

// podYAML is a valid manifest with one container; the label v tells
// versions of a pod apart.
func podYAML(id, v string) string {
	return fmt.Sprintf("version: v1beta1\nid: %s\nlabels: {v: %q}\ncontainers:\n  - name: app\n    image: example.org/app:1\n", id, v)
}

// gitConfig is a git source on url at main, polled hourly (tests call Poll
// themselves), reading the folder manifests.
func gitConfig(url string) config.Source {
	return config.Source{
		Name: "fleet", Type: config.TypeGit, URL: url, Ref: "main", Path: "manifests",
		Interval: time.Hour, Timeout: 30 * time.Second,
	}
}

// fixture is one git source under test, polled by hand, with a Merger that
// takes its updates (as the agent wires them).
type fixture struct {
	t        *testing.T
	repo     *gittest.Repo
	srv      *gittest.Server // nil over file://
	cfg      config.Source
	stateDir string
	src      *gitsource.Source
	merger   *sources.Merger
	logs     *testkit.LogBuffer
}

// Credentials of the smart HTTP servers the tests start.
const (
	httpUser     = "ops"
	httpPassword = "hunter2-Zq9vX7"
)

// newFixture makes a repository and, with overHTTP, a smart HTTP server
// with basic auth in front of it (auth.username + auth.passwordFile); else
// the source reads it over file://. The source is not made yet: tests may
// change f.cfg first, then call f.start.
func newFixture(t *testing.T, overHTTP bool) *fixture {
	t.Helper()
	f := &fixture{t: t, repo: gittest.NewRepo(t), stateDir: t.TempDir()}
	if overHTTP {
		f.srv = gittest.Serve(t, f.repo.Root, httpUser, httpPassword)
		f.cfg = gitConfig(f.srv.RepoURL(f.repo))
		pw := filepath.Join(t.TempDir(), "password")
		testkit.WriteFile(t, pw, httpPassword+"\n")
		f.cfg.Auth = config.Auth{Username: httpUser, PasswordFile: pw}
	} else {
		f.cfg = gitConfig(f.repo.FileURL())
	}
	return f
}

// start makes the source and a Merger for it (state persisted under
// stateDir, as the agent does).
func (f *fixture) start() *fixture {
	f.t.Helper()
	var log *slog.Logger
	log, f.logs = testkit.Logger(f.t)
	f.src = gitsource.New(f.cfg, f.stateDir, log)
	m, err := sources.NewMerger([]sources.SourceInfo{{Name: f.cfg.Name, Type: config.TypeGit}}, sources.MergeOptions{StateDir: f.stateDir}, log)
	if err != nil {
		f.t.Fatal(err)
	}
	f.merger = m
	return f
}

// poll polls once with a deadline; an update goes to the Merger too.
func (f *fixture) poll() (sources.Update, bool) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, ok := f.src.Poll(ctx)
	if ok {
		f.merger.Apply(u)
	}
	return u, ok
}

// mustUpdate polls and wants a good update at commit sha holding exactly
// the pods want ("id=v" each, in order).
func (f *fixture) mustUpdate(sha string, want ...string) sources.Update {
	f.t.Helper()
	u, ok := f.poll()
	if !ok {
		f.t.Fatalf("poll: no update, want commit %s with %v", sha, want)
	}
	if u.Err != nil {
		f.t.Fatalf("poll: error %v, want commit %s with %v", u.Err, sha, want)
	}
	if u.Revision != sha {
		f.t.Fatalf("poll: revision %s, want %s", u.Revision, sha)
	}
	if got := podsOf(u); strings.Join(got, " ") != strings.Join(want, " ") {
		f.t.Fatalf("poll at %s: pods %v, want %v", sha, got, want)
	}
	return u
}

// mustError polls and wants an error update.
func (f *fixture) mustError() error {
	f.t.Helper()
	u, ok := f.poll()
	if !ok {
		f.t.Fatal("poll: no update, want an error")
	}
	if u.Err == nil {
		f.t.Fatalf("poll: update at %s with %v, want an error", u.Revision, podsOf(u))
	}
	if len(u.Manifests) > 0 || u.Revision != "" {
		f.t.Fatalf("poll: error update carries revision %q and %d manifests", u.Revision, len(u.Manifests))
	}
	return u.Err
}

// mustSameError polls a source that failed with err and wants the same
// failure again: every failed poll is an update (hostlet_source_errors_total
// counts failures), and the merge takes it as the one error it has (the
// merge reports no change).
func (f *fixture) mustSameError(err error) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, ok := f.src.Poll(ctx)
	if !ok || u.Err == nil || u.Err.Error() != err.Error() {
		f.t.Fatalf("poll: update %v (err %v), want the same failure again: %v", ok, u.Err, err)
	}
	if f.merger.Apply(u) {
		f.t.Fatalf("the merge took the same failure again as a change: %v", err)
	}
}

// mustNoUpdate polls and wants nothing new.
func (f *fixture) mustNoUpdate() {
	f.t.Helper()
	if u, ok := f.poll(); ok {
		f.t.Fatalf("poll: unexpected update (revision %s, err %v, pods %v)", u.Revision, u.Err, podsOf(u))
	}
}

// state checks the Merger: the accepted pods ("id=v", config order) are
// want, all at revision rev, and the source's error contains errPart (""
// for no error).
func (f *fixture) state(rev, errPart string, want ...string) {
	f.t.Helper()
	st := f.merger.State()
	var got []string
	for _, e := range st.Accepted {
		got = append(got, e.Manifest.ID+"="+e.Manifest.Labels["v"])
		if e.Revision != rev {
			f.t.Errorf("merged pod %s at revision %s, want %s", e.Manifest.ID, e.Revision, rev)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		f.t.Errorf("merged pods %v, want %v", got, want)
	}
	if len(st.Sources) != 1 {
		f.t.Fatalf("%d sources in the state", len(st.Sources))
	}
	s := st.Sources[0]
	if s.Revision != rev {
		f.t.Errorf("source revision %s, want %s", s.Revision, rev)
	}
	switch {
	case errPart == "" && s.Error != "":
		f.t.Errorf("source error %q, want none", s.Error)
	case errPart != "" && !strings.Contains(s.Error, errPart):
		f.t.Errorf("source error %q, want one containing %q", s.Error, errPart)
	}
	if !st.Ready {
		f.t.Error("state not ready")
	}
}

// podsOf lists an update's pods as "id=v", in the order delivered.
func podsOf(u sources.Update) []string {
	var out []string
	for _, m := range u.Manifests {
		out = append(out, m.Manifest.ID+"="+m.Manifest.Labels["v"])
	}
	return out
}

// cacheDir is where the source caches its repository.
func (f *fixture) cacheDir() string { return filepath.Join(f.stateDir, "git", f.cfg.Name) }

// packFiles lists the cache's pack files.
func (f *fixture) packFiles() []string {
	f.t.Helper()
	list, err := filepath.Glob(filepath.Join(f.cacheDir(), "objects", "pack", "*.pack"))
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Strings(list)
	return list
}

// cacheHealthy checks the cache with the git CLI: it is a valid repository
// holding commit sha, and git fsck finds nothing wrong with it.
func (f *fixture) cacheHealthy(sha string) {
	f.t.Helper()
	for _, args := range [][]string{
		{"cat-file", "-e", sha + "^{commit}"},
		{"fsck", "--no-progress", "--no-dangling"},
	} {
		cmd := exec.Command("git", append([]string{"--git-dir", f.cacheDir()}, args...)...)
		cmd.Env = gittest.Env(f.t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			f.t.Fatalf("cache %s: git %s: %v\n%s", f.cacheDir(), strings.Join(args, " "), err, out)
		}
	}
}
