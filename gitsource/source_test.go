package gitsource_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
	"github.com/hostlet/hostlet/sources"
)

// transports runs a test over file:// and over smart HTTP with basic auth.
func transports(t *testing.T, fn func(t *testing.T, overHTTP bool)) {
	t.Run("file", func(t *testing.T) { fn(t, false) })
	t.Run("http", func(t *testing.T) { fn(t, true) })
}

func TestNewCommitEditsAddsAndDeletes(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, overHTTP bool) {
		f := newFixture(t, overHTTP).start()
		c1 := f.repo.Change("first", map[string]string{
			"manifests/a.yaml":  podYAML("a", "1"),
			"manifests/b.yaml":  podYAML("b", "1"),
			"manifests/c.yaml":  podYAML("c", "1"),
			"README.md":         "not read",
			"other/x.yaml":      podYAML("x", "1"), // outside path
			"manifests/.h.yaml": podYAML("hidden", "1"),
		})
		u := f.mustUpdate(c1, "a=1", "b=1", "c=1")
		if u.Source != "fleet" || u.Files != 3 {
			t.Fatalf("update source %q files %d, want fleet and 3", u.Source, u.Files)
		}
		for _, m := range u.Manifests {
			if m.Origin.Source != "fleet" || !strings.HasPrefix(m.Origin.File, "manifests/") {
				t.Errorf("origin %+v, want source fleet and a file under manifests/", m.Origin)
			}
		}
		f.state(c1, "", "a=1", "b=1", "c=1")
		f.mustNoUpdate()

		// One commit edits a, deletes b and adds d.
		c2 := f.repo.Change("second", map[string]string{
			"manifests/a.yaml":     podYAML("a", "2"),
			"manifests/sub/d.yaml": podYAML("d", "1"),
		}, "manifests/b.yaml")
		f.mustUpdate(c2, "a=2", "c=1", "d=1")
		f.state(c2, "", "a=2", "c=1", "d=1")
		f.mustNoUpdate()
	})
}

func TestWrongPasswordIsAuthErrorAndPrunesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1"), "manifests/b.yaml": podYAML("b", "1")})
	f.mustUpdate(c1, "a=1", "b=1")

	// The password changes on the host (a rotated token, a typo) while a
	// commit deletes b: nothing may be pruned.
	testkit.WriteFile(t, f.cfg.Auth.PasswordFile, "not-the-password\n")
	f.repo.Change("drop b", nil, "manifests/b.yaml")
	err := f.mustError()
	if !errors.Is(err, gitsource.ErrAuth) {
		t.Fatalf("error %v, want ErrAuth", err)
	}
	if !strings.Contains(err.Error(), "authentication failed") || !strings.Contains(err.Error(), "fleet") {
		t.Fatalf("error %q does not say authentication failed for source fleet", err)
	}
	f.state(c1, "authentication failed", "a=1", "b=1")
	// The same failure again is counted, but is not news to the merge.
	f.mustSameError(err)
	f.state(c1, "authentication failed", "a=1", "b=1")

	// Fixed: the new commit arrives and the error clears.
	testkit.WriteFile(t, f.cfg.Auth.PasswordFile, httpPassword+"\n")
	c3 := f.repo.Head()
	f.mustUpdate(c3, "a=1")
	f.state(c3, "", "a=1")
	for _, s := range []string{httpPassword, "not-the-password"} {
		if strings.Contains(f.logs.String(), s) {
			t.Errorf("a password (%q) is in the logs", s)
		}
	}
}

func TestForcePushToOlderCommitIsFollowed(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, overHTTP bool) {
		f := newFixture(t, overHTTP).start()
		c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
		f.mustUpdate(c1, "a=1")
		c2 := f.repo.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2"), "manifests/b.yaml": podYAML("b", "1")})
		f.mustUpdate(c2, "a=2", "b=1")

		f.repo.ForcePush(c1)
		f.mustUpdate(c1, "a=1")
		f.state(c1, "", "a=1")
		f.mustNoUpdate()

		// A force-push to a commit the cache never saw (rewritten history).
		f.repo.Git("reset", "--quiet", "--hard", c1)
		f.repo.Write("manifests/c.yaml", podYAML("c", "1"))
		c3 := f.repo.Commit("rewritten")
		f.repo.Write("manifests/a.yaml", podYAML("a", "3"))
		c4 := f.repo.Commit("rewritten again")
		f.repo.ForcePush(c4)
		f.mustUpdate(c4, "a=3", "c=1")
		f.repo.ForcePush(c3)
		f.mustUpdate(c3, "a=1", "c=1")

		// A fresh hostlet (empty cache) follows the same branch.
		f2 := &fixture{t: t, repo: f.repo, cfg: f.cfg, stateDir: t.TempDir()}
		f2.start().mustUpdate(c3, "a=1", "c=1")
	})
}

func TestDeletedBranchKeepsLastGoodSet(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, overHTTP bool) {
		f := newFixture(t, overHTTP)
		f.cfg.Ref = "live"
		f.start()
		c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
		f.repo.PushBranch("live", c1)
		f.mustUpdate(c1, "a=1")

		f.repo.DeleteBranch("live")
		err := f.mustError()
		if !errors.Is(err, gitsource.ErrRefMissing) || !strings.Contains(err.Error(), `"live"`) {
			t.Fatalf("error %v, want ErrRefMissing naming the ref", err)
		}
		f.state(c1, "live", "a=1")
		f.mustSameError(err)

		c2 := f.repo.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
		f.repo.PushBranch("live", c2)
		f.mustUpdate(c2, "a=2")
		f.state(c2, "", "a=2")
	})
}

func TestDeletedPathKeepsLastGoodSet(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, overHTTP bool) {
		f := newFixture(t, overHTTP).start()
		c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1"), "keep.txt": "x"})
		f.mustUpdate(c1, "a=1")

		c2 := f.repo.Change("remove the folder", nil, "manifests")
		err := f.mustError()
		if !strings.Contains(err.Error(), `"manifests"`) || !strings.Contains(err.Error(), c2[:12]) {
			t.Fatalf("error %q does not name the path and the commit", err)
		}
		f.state(c1, "manifests", "a=1")
		f.mustSameError(err)

		// A folder that is there but holds no manifest is an empty set: the
		// Merger refuses it (sync.allowEmpty is off).
		f.repo.Change("empty folder", map[string]string{"manifests/README.md": "nothing here"})
		u, ok := f.poll()
		if !ok || u.Err != nil || len(u.Manifests) != 0 {
			t.Fatalf("poll of an empty folder: ok %v, err %v, %d manifests; want an empty set", ok, u.Err, len(u.Manifests))
		}
		f.state(c1, "no manifests", "a=1")

		c4 := f.repo.Change("back", map[string]string{"manifests/a.yaml": podYAML("a", "4")})
		f.mustUpdate(c4, "a=4")
		f.state(c4, "", "a=4")
	})
}

func TestServerDownKeepsLastGoodSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
	f.mustUpdate(c1, "a=1")

	f.srv.Stop()
	err := f.mustError()
	if !errors.Is(err, gitsource.ErrRepoAccess) || !strings.Contains(err.Error(), "not reachable") {
		t.Fatalf("error %v, want ErrRepoAccess", err)
	}
	f.state(c1, "not reachable", "a=1")
	// The first poll may have met a kept-alive connection the server cut
	// ("connection reset"); from the next one on, every poll fails alike
	// ("connection refused").
	err = f.mustError()
	f.mustSameError(err)

	// Server back with a new commit: it arrives and the error clears.
	c2 := f.repo.Change("second", map[string]string{"manifests/b.yaml": podYAML("b", "1")})
	f.srv.Start()
	f.mustUpdate(c2, "a=1", "b=1")
	f.state(c2, "", "a=1", "b=1")

	// Down and back at the same commit: the error clears with no new commit.
	f.srv.Stop()
	f.mustError()
	f.state(c2, "not reachable", "a=1", "b=1")
	f.srv.Start()
	f.mustUpdate(c2, "a=1", "b=1")
	f.state(c2, "", "a=1", "b=1")
}

func TestMissingRepositoryIsAnError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	f.cfg.URL = f.srv.URL() + "/nope.git"
	f.start()
	err := f.mustError()
	if !errors.Is(err, gitsource.ErrRepoAccess) {
		t.Fatalf("error %v, want ErrRepoAccess", err)
	}
	st := f.merger.State()
	if st.Ready || st.Sources[0].Error == "" {
		t.Fatalf("state after a failed first read: ready %v, error %q", st.Ready, st.Sources[0].Error)
	}
}

// TestHostnamePaths: `paths: [common, "hosts/{{.Hostname}}"]` gives each
// host common plus its own folder, from config files as hosts have them.
func TestHostnamePaths(t *testing.T) {
	t.Parallel()
	r := gittest.NewRepo(t)
	c1 := r.Change("fleet", map[string]string{
		"common/base.yaml":        podYAML("base", "1"),
		"common/z/logs.yaml":      podYAML("logs", "1"),
		"hosts/web-1/web.yaml":    podYAML("web1", "1"),
		"hosts/web-1/cache.yaml":  podYAML("cache1", "1"),
		"hosts/web-2/web.yaml":    podYAML("web2", "1"),
		"hosts/web-3/other.yaml":  podYAML("web3", "1"),
		"hosts/web-2/.draft.yaml": podYAML("draft", "1"),
	})
	want := map[string][]string{
		"web-1": {"base=1", "logs=1", "cache1=1", "web1=1"},
		"web-2": {"base=1", "logs=1", "web2=1"},
	}
	for host, pods := range want {
		t.Run(host, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "hostlet.yaml")
			testkit.WriteFile(t, file, "hostname: "+host+"\nstateDir: "+filepath.Join(dir, "state")+"\n"+
				"sources:\n  - name: fleet\n    type: git\n    url: "+r.FileURL()+"\n    ref: main\n    interval: 1h\n"+
				"    paths: [common, \"hosts/{{.Hostname}}\"]\n")
			cfg, err := config.Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(cfg.Sources[0].Paths, ","); got != "common,hosts/"+host {
				t.Fatalf("paths %s", got)
			}
			f := &fixture{t: t, repo: r, cfg: cfg.Sources[0], stateDir: cfg.StateDir}
			f.start()
			u := f.mustUpdate(c1, pods...)
			var files []string
			for _, m := range u.Manifests {
				files = append(files, m.Origin.File)
			}
			for _, file := range files {
				if !strings.HasPrefix(file, "common/") && !strings.HasPrefix(file, "hosts/"+host+"/") {
					t.Errorf("%s read from %s", host, file)
				}
			}
			f.state(c1, "", pods...)
		})
	}
}

func TestSignedCommits(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, overHTTP bool) {
		f := newFixture(t, overHTTP)
		ops := gittest.NewKey(t, "Ops", "ops@hostlet.invalid")
		ops2 := gittest.NewKey(t, "Ops Two", "ops2@hostlet.invalid")
		mallory := gittest.NewKey(t, "Mallory", "mallory@hostlet.invalid")
		f.cfg.Verify.KeyringFile = filepath.Join(t.TempDir(), "keyring.asc")
		gittest.WriteKeyring(t, f.cfg.Verify.KeyringFile, ops, ops2)
		f.start()

		f.repo.Write("manifests/a.yaml", podYAML("a", "1"))
		c1 := f.repo.CommitSigned("signed", ops)
		f.repo.Push()
		f.mustUpdate(c1, "a=1")
		f.state(c1, "", "a=1")

		// Unsigned: refused, naming the commit; nothing of it is applied.
		f.repo.Write("manifests/a.yaml", podYAML("a", "evil"))
		f.repo.Write("manifests/b.yaml", podYAML("b", "evil"))
		c2 := f.repo.Commit("unsigned")
		f.repo.Push()
		err := f.mustError()
		if !errors.Is(err, gitsource.ErrSignature) || !strings.Contains(err.Error(), c2) || !strings.Contains(err.Error(), "not signed") {
			t.Fatalf("unsigned commit: error %v, want ErrSignature naming %s", err, c2)
		}
		f.state(c1, c2, "a=1")
		f.mustSameError(err)

		// Signed by a key not in the keyring: refused the same way.
		f.repo.Write("manifests/c.yaml", podYAML("c", "evil"))
		c3 := f.repo.CommitSigned("foreign", mallory)
		f.repo.Push()
		err = f.mustError()
		if !errors.Is(err, gitsource.ErrSignature) || !strings.Contains(err.Error(), c3) {
			t.Fatalf("foreign-signed commit: error %v, want ErrSignature naming %s", err, c3)
		}
		f.state(c1, c3, "a=1")

		// A signed commit on top is applied whole (it holds the unsigned
		// changes too: what is verified is the commit the branch points at).
		f.repo.Remove("manifests/c.yaml")
		f.repo.Remove("manifests/b.yaml")
		f.repo.Write("manifests/a.yaml", podYAML("a", "4"))
		c4 := f.repo.CommitSigned("signed again", ops2)
		f.repo.Push()
		f.mustUpdate(c4, "a=4")
		f.state(c4, "", "a=4")
	})
}

func TestSignatureChecksNeedAKeyring(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.cfg.Verify.KeyringFile = filepath.Join(t.TempDir(), "missing.asc")
	f.start()
	f.repo.Write("manifests/a.yaml", podYAML("a", "1"))
	f.repo.CommitSigned("signed", gittest.NewKey(t, "Ops", "ops@hostlet.invalid"))
	f.repo.Push()
	err := f.mustError()
	if !strings.Contains(err.Error(), "keyringFile") {
		t.Fatalf("error %v, want one naming verify.keyringFile", err)
	}
	if st := f.merger.State(); len(st.Accepted) != 0 {
		t.Fatalf("%d manifests accepted with no keyring to check them", len(st.Accepted))
	}

	// A garbage keyring verifies nothing either.
	testkit.WriteFile(t, f.cfg.Verify.KeyringFile, "not a keyring")
	if err := f.mustError(); !errors.Is(err, gitsource.ErrSignature) && !strings.Contains(err.Error(), "keyring") {
		t.Fatalf("error %v with a garbage keyring", err)
	}
	if st := f.merger.State(); len(st.Accepted) != 0 {
		t.Fatalf("%d manifests accepted with a garbage keyring", len(st.Accepted))
	}
}

func TestRefsTagsAndFullSHAs(t *testing.T) {
	t.Parallel()
	transports(t, func(t *testing.T, overHTTP bool) {
		base := newFixture(t, overHTTP)
		r := base.repo
		c1 := r.Change("one", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
		c2 := r.Change("two", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
		c3 := r.Change("three", map[string]string{"manifests/a.yaml": podYAML("a", "3")})
		r.Tag("v1", c1)
		tagObj := r.AnnotatedTag("v2", c2, "release two")
		if tagObj == c2 {
			t.Fatal("annotated tag has the commit's SHA")
		}
		for _, tc := range []struct {
			ref, sha, pod string
		}{
			{"main", c3, "a=3"},
			{"v1", c1, "a=1"},
			{"v2", c2, "a=2"},
			{c2, c2, "a=2"}, // a full SHA behind the branch head
			{c1, c1, "a=1"},
		} {
			t.Run(tc.ref, func(t *testing.T) {
				f := &fixture{t: t, repo: r, srv: base.srv, cfg: base.cfg, stateDir: t.TempDir()}
				f.cfg.Ref = tc.ref
				f.start()
				f.mustUpdate(tc.sha, tc.pod)
				f.mustNoUpdate()
			})
		}

		// A tag moved by force and a new commit on main: tag sources follow
		// the tag, SHA sources stay.
		t.Run("moved tag", func(t *testing.T) {
			f := &fixture{t: t, repo: r, srv: base.srv, cfg: base.cfg, stateDir: t.TempDir()}
			f.cfg.Ref = "v1"
			f.start()
			f.mustUpdate(c1, "a=1")
			r.Git("tag", "--force", "v1", c3)
			r.Git("push", "--quiet", "--force", "origin", "refs/tags/v1")
			f.mustUpdate(c3, "a=3")
		})
		// The config changes from the branch to an older SHA: the cache,
		// made by shallow fetches of the branch, cannot have it.
		t.Run("SHA after a branch", func(t *testing.T) {
			f := &fixture{t: t, repo: r, srv: base.srv, cfg: base.cfg, stateDir: t.TempDir()}
			f.cfg.Ref = "main"
			f.start()
			f.mustUpdate(r.Head(), "a=3")
			f2 := &fixture{t: t, repo: r, srv: base.srv, cfg: base.cfg, stateDir: f.stateDir}
			f2.cfg.Ref = c1
			f2.start().mustUpdate(c1, "a=1")
			f2.cacheHealthy(c1)
		})
		t.Run("unknown SHA", func(t *testing.T) {
			f := &fixture{t: t, repo: r, srv: base.srv, cfg: base.cfg, stateDir: t.TempDir()}
			f.cfg.Ref = strings.Repeat("ab", 20)
			f.start()
			err := f.mustError()
			if !errors.Is(err, gitsource.ErrRefMissing) || !strings.Contains(err.Error(), f.cfg.Ref) {
				t.Fatalf("error %v, want ErrRefMissing naming the SHA", err)
			}
		})
	})
}

// TestNoChangePollDoesNoOtherWork counts requests at the server: a poll
// that finds the same commit makes one ref advertisement (info/refs) and no
// fetch (upload-pack), and sends no update.
func TestNoChangePollDoesNoOtherWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
	f.srv.ResetCounts()
	f.mustUpdate(c1, "a=1")
	if c := f.srv.Counts(); c.InfoRefs != 2 || c.UploadPack < 1 || c.Unauthorized != 0 || c.Other != 0 {
		t.Fatalf("first poll: %+v, want ls-remote and a fetch (2 info/refs GETs, upload-pack POSTs)", c)
	}
	packs := f.packFiles()

	for i := range 3 {
		f.srv.ResetCounts()
		f.mustNoUpdate()
		if c := f.srv.Counts(); c != (gittest.Counts{InfoRefs: 1}) {
			t.Fatalf("no-change poll %d: %+v, want exactly one info/refs GET", i, c)
		}
	}
	if got := f.packFiles(); strings.Join(got, ",") != strings.Join(packs, ",") {
		t.Fatalf("no-change polls changed the cache's packs: %v -> %v", packs, got)
	}

	// A new commit costs a fetch; the next poll is cheap again.
	c2 := f.repo.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
	f.srv.ResetCounts()
	f.mustUpdate(c2, "a=2")
	if c := f.srv.Counts(); c.UploadPack < 1 {
		t.Fatalf("poll of a new commit: %+v, want a fetch", c)
	}
	f.srv.ResetCounts()
	f.mustNoUpdate()
	if c := f.srv.Counts(); c != (gittest.Counts{InfoRefs: 1}) {
		t.Fatalf("no-change poll after the new commit: %+v", c)
	}

	// A restarted hostlet with the commit in its cache fetches nothing.
	f2 := &fixture{t: t, repo: f.repo, srv: f.srv, cfg: f.cfg, stateDir: f.stateDir}
	f2.start()
	f.srv.ResetCounts()
	f2.mustUpdate(c2, "a=2")
	if c := f.srv.Counts(); c != (gittest.Counts{InfoRefs: 1}) {
		t.Fatalf("first poll of a restarted hostlet with the commit cached: %+v", c)
	}
}

// TestCorruptCacheRecovers: a damaged pack file in the cache is detected
// and the cache cloned again.
func TestCorruptCacheRecovers(t *testing.T) {
	t.Parallel()
	damages := []struct {
		name   string
		damage func(t *testing.T, f *fixture)
	}{
		{"truncated pack", func(t *testing.T, f *fixture) {
			for _, p := range f.packFiles() {
				fi, err := os.Stat(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.Truncate(p, fi.Size()/2); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"garbage in the pack", func(t *testing.T, f *fixture) {
			for _, p := range f.packFiles() {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				for i := 12; i < len(b)-20; i++ { // keep the header and the checksum
					b[i] = 0xff
				}
				testkit.WriteFile(t, p, string(b))
			}
		}},
		{"pack folder replaced by a file", func(t *testing.T, f *fixture) {
			dir := filepath.Join(f.cacheDir(), "objects", "pack")
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, dir, "junk") // the fetch cannot write its pack
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			transports(t, func(t *testing.T, overHTTP bool) {
				f := newFixture(t, overHTTP).start()
				files := map[string]string{}
				for _, id := range []string{"a", "b", "c", "d", "e"} {
					files["manifests/"+id+".yaml"] = podYAML(id, "1")
				}
				c1 := f.repo.Change("first", files)
				f.mustUpdate(c1, "a=1", "b=1", "c=1", "d=1", "e=1")
				if len(f.packFiles()) == 0 {
					t.Fatal("no pack file in the cache")
				}
				d.damage(t, f)

				c2 := f.repo.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
				f.mustUpdate(c2, "a=2", "b=1", "c=1", "d=1", "e=1")
				f.state(c2, "", "a=2", "b=1", "c=1", "d=1", "e=1")
				f.cacheHealthy(c2)
				if !strings.Contains(f.logs.String(), "cloning again") {
					t.Error("no log line says the cache was cloned again")
				}
				f.mustNoUpdate()
				// The next commit goes through the repaired cache.
				c3 := f.repo.Change("third", map[string]string{"manifests/b.yaml": podYAML("b", "3")})
				f.mustUpdate(c3, "a=2", "b=3", "c=1", "d=1", "e=1")
				f.cacheHealthy(c3)
			})
		})
	}
}

// TestCorruptCacheAtSameCommitRecovers: a restarted hostlet whose cache
// was damaged while it was down, with no new commit.
func TestCorruptCacheAtSameCommitRecovers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1"), "manifests/b.yaml": podYAML("b", "1")})
	f.mustUpdate(c1, "a=1", "b=1")
	for _, p := range f.packFiles() {
		if err := os.Truncate(p, 40); err != nil {
			t.Fatal(err)
		}
	}
	f2 := &fixture{t: t, repo: f.repo, srv: f.srv, cfg: f.cfg, stateDir: f.stateDir}
	f2.start().mustUpdate(c1, "a=1", "b=1")
	f2.cacheHealthy(c1)
}

// TestHalfWrittenCacheRecovers: a cache folder left half-written (a crash
// during the first clone, a disk filling up) is detected and cloned again.
func TestHalfWrittenCacheRecovers(t *testing.T) {
	t.Parallel()
	damages := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"HEAD deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "HEAD")); err != nil {
				t.Fatal(err)
			}
		}},
		{"garbage config", func(t *testing.T, dir string) {
			testkit.WriteFile(t, filepath.Join(dir, "config"), "[[[ not a git config \x00\x01")
		}},
		{"empty config", func(t *testing.T, dir string) {
			testkit.WriteFile(t, filepath.Join(dir, "config"), "")
		}},
		{"objects deleted", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, "objects")); err != nil {
				t.Fatal(err)
			}
		}},
		{"empty folder", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"a file where the folder was", func(t *testing.T, dir string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			testkit.WriteFile(t, dir, "junk")
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			f := newFixture(t, false).start()
			c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
			f.mustUpdate(c1, "a=1")
			d.damage(t, f.cacheDir())

			// A new commit, read by the running source.
			c2 := f.repo.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
			f.mustUpdate(c2, "a=2")
			f.state(c2, "", "a=2")
			f.cacheHealthy(c2)

			// The same damage found by a restarted hostlet at the same commit.
			d.damage(t, f.cacheDir())
			f2 := &fixture{t: t, repo: f.repo, cfg: f.cfg, stateDir: f.stateDir}
			f2.start().mustUpdate(c2, "a=2")
			f2.cacheHealthy(c2)
		})
	}
}

// TestURLChangeStartsOver: the cache of a source whose url changed in the
// config is not reused.
func TestURLChangeStartsOver(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
	f.mustUpdate(c1, "a=1")

	other := gittest.NewRepo(t)
	o1 := other.Change("other", map[string]string{"manifests/z.yaml": podYAML("z", "1")})
	f2 := &fixture{t: t, repo: other, cfg: f.cfg, stateDir: f.stateDir}
	f2.cfg.URL = other.FileURL()
	f2.start().mustUpdate(o1, "z=1")
}

// TestTriggerFetchesNow: Run polls at start, then on Trigger (POST /sync)
// long before its interval.
func TestTriggerFetchesNow(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	log, _ := testkit.Logger(t)
	src := gitsource.New(f.cfg, f.stateDir, log)
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})

	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan sources.Update)
	done := make(chan struct{})
	go func() { defer close(done); src.Run(ctx, out) }()
	t.Cleanup(func() { cancel(); <-done })

	next := func() sources.Update {
		t.Helper()
		select {
		case u := <-out:
			return u
		case <-time.After(time.Minute):
			t.Fatal("no update within a minute")
		}
		return sources.Update{}
	}
	if u := next(); u.Err != nil || u.Revision != c1 {
		t.Fatalf("first update: %v %s, want %s", u.Err, u.Revision, c1)
	}
	c2 := f.repo.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
	src.Trigger()
	if u := next(); u.Err != nil || u.Revision != c2 {
		t.Fatalf("update after Trigger: %v %s, want %s", u.Err, u.Revision, c2)
	}
	// A trigger with nothing new sends nothing; it costs one ls-remote.
	f.srv.ResetCounts()
	src.Trigger()
	deadline := time.Now().Add(30 * time.Second)
	for f.srv.Counts().InfoRefs < 1 {
		if time.Now().After(deadline) {
			t.Fatal("Trigger did not poll within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Had that poll sent an update, it would come before the next commit's.
	c3 := f.repo.Change("third", map[string]string{"manifests/a.yaml": podYAML("a", "3")})
	src.Trigger()
	if u := next(); u.Err != nil || u.Revision != c3 {
		t.Fatalf("update after the no-change Trigger and a new commit: %v %s, want %s", u.Err, u.Revision, c3)
	}
}

// TestDecodeErrorKeepsLastGoodSet: a file that does not decode fails the
// whole read (never a partial set); the last good set stays.
func TestDecodeErrorKeepsLastGoodSet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1"), "manifests/b.yaml": podYAML("b", "1")})
	f.mustUpdate(c1, "a=1", "b=1")
	f.repo.Change("broken", map[string]string{"manifests/a.yaml": podYAML("a", "2"), "manifests/b.yaml": "version: v1beta1\nid: [b\n"})
	err := f.mustError()
	if !strings.Contains(err.Error(), "manifests/b.yaml") {
		t.Fatalf("error %q does not name the file", err)
	}
	f.state(c1, "manifests/b.yaml", "a=1", "b=1")
}

// TestReadOnce: hostlet validate reads a git source once; decode errors
// come back alongside what did decode (validate reports every error).
func TestReadOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1"), "manifests/b.yaml": podYAML("b", "1")})
	log, _ := testkit.Logger(t)
	snap, err := gitsource.ReadOnce(context.Background(), f.cfg, log)
	if err != nil {
		t.Fatalf("ReadOnce: %v", err)
	}
	if snap.Name != "fleet" || snap.Type != config.TypeGit || snap.Revision != c1 || snap.Files != 2 || len(snap.Manifests) != 2 {
		t.Fatalf("snapshot %s/%s at %s, %d files, %d manifests", snap.Name, snap.Type, snap.Revision, snap.Files, len(snap.Manifests))
	}

	c2 := f.repo.Change("broken", map[string]string{"manifests/b.yaml": "version: v1beta1\nid: [b\n"})
	snap, err = gitsource.ReadOnce(context.Background(), f.cfg, log)
	if err == nil || !strings.Contains(err.Error(), "manifests/b.yaml") {
		t.Fatalf("ReadOnce of a broken file: %v, want an error naming it", err)
	}
	if snap.Revision != c2 || snap.Files != 2 || len(snap.Manifests) != 1 || snap.Manifests[0].Manifest.ID != "a" {
		t.Fatalf("ReadOnce of a broken file: snapshot at %s, %d files, %d manifests; want %s, 2 files and pod a alongside the error", snap.Revision, snap.Files, len(snap.Manifests), c2)
	}

	f.cfg.Auth.PasswordFile = filepath.Join(t.TempDir(), "missing")
	if _, err := gitsource.ReadOnce(context.Background(), f.cfg, log); err == nil || !strings.Contains(err.Error(), "passwordFile") {
		t.Fatalf("ReadOnce with a missing password file: %v", err)
	}
}

// TestSecretsNeverInLogsOrErrors: the password (from passwordFile, or in
// the URL as user:password@) appears in no log line and no error, in any of
// the forms a URL may spell it.
func TestSecretsNeverInLogsOrErrors(t *testing.T) {
	t.Parallel()
	const pw = "s3cr3t-p@ss:w/rd%41" // characters URL encoders treat differently
	const wrong = "wr0ng-p@ss/%42"
	forms := func(p string) []string {
		return []string{p, url.QueryEscape(p), url.PathEscape(p), url.UserPassword("ops", p).String()}
	}
	r := gittest.NewRepo(t)
	srv := gittest.Serve(t, r.Root, "ops", pw)
	c1 := r.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
	host := strings.TrimPrefix(srv.URL(), "http://")

	check := func(t *testing.T, f *fixture, errs []error) {
		t.Helper()
		var all []string
		for _, e := range errs {
			all = append(all, e.Error())
		}
		all = append(all, f.logs.String())
		for _, st := range f.merger.State().Sources {
			all = append(all, st.Error)
		}
		for _, text := range all {
			for _, secret := range append(forms(pw), forms(wrong)...) {
				if strings.Contains(text, secret) {
					t.Errorf("secret %q found in %q", secret, text)
				}
			}
		}
	}

	t.Run("passwordFile", func(t *testing.T) {
		f := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(srv.RepoURL(r)), stateDir: t.TempDir()}
		f.cfg.Auth = config.Auth{Username: "ops", PasswordFile: filepath.Join(t.TempDir(), "pw")}
		testkit.WriteFile(t, f.cfg.Auth.PasswordFile, pw+"\n")
		f.start().mustUpdate(c1, "a=1")
		var errs []error
		testkit.WriteFile(t, f.cfg.Auth.PasswordFile, wrong)
		errs = append(errs, f.mustError())
		if !errors.Is(errs[0], gitsource.ErrAuth) {
			t.Fatalf("wrong password: %v", errs[0])
		}
		testkit.WriteFile(t, f.cfg.Auth.PasswordFile, pw)
		f.mustUpdate(c1, "a=1")
		srv.Stop()
		errs = append(errs, f.mustError())
		srv.Start()
		f.mustUpdate(c1, "a=1")
		check(t, f, errs)
	})

	t.Run("user:password in the url", func(t *testing.T) {
		withPW := func(p string) string {
			return "http://" + url.UserPassword("ops", p).String() + "@" + host + "/" + r.Name
		}
		f := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(withPW(pw)), stateDir: t.TempDir()}
		f.start().mustUpdate(c1, "a=1")
		var errs []error
		srv.Stop()
		errs = append(errs, f.mustError())
		if !strings.Contains(errs[0].Error(), host) {
			t.Errorf("error %q does not name the server", errs[0])
		}
		srv.Start()
		f.mustUpdate(c1, "a=1")

		// A wrong password in the URL, and a missing repository.
		f2 := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(withPW(wrong)), stateDir: t.TempDir()}
		f2.start()
		err := f2.mustError()
		if !errors.Is(err, gitsource.ErrAuth) {
			t.Fatalf("wrong password in the url: %v", err)
		}
		errs = append(errs, err)
		f3 := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(strings.Replace(withPW(pw), r.Name, "nope.git", 1)), stateDir: t.TempDir()}
		f3.start()
		errs = append(errs, f3.mustError())
		check(t, f, errs)
		check(t, f2, errs)
		check(t, f3, errs)
		// ReadOnce (hostlet validate) too.
		log, buf := testkit.Logger(t)
		srv.Stop()
		_, err = gitsource.ReadOnce(context.Background(), f.cfg, log)
		srv.Start()
		if err == nil {
			t.Fatal("ReadOnce of a stopped server worked")
		}
		f4 := &fixture{t: t, repo: r, srv: srv, cfg: f.cfg, stateDir: t.TempDir(), logs: buf}
		f4.merger = f.merger
		check(t, f4, []error{err})
	})
}

// TestSymlinksAndSubmodulesAreContentErrors: a symlinked manifest, or a
// configured path that is a symlink or a submodule, is an error of the
// commit (last good set kept), not a damaged cache to clone again.
func TestSymlinksAndSubmodulesAreContentErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false).start()
	c1 := f.repo.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1"), "real/b.yaml": podYAML("b", "1")})
	f.mustUpdate(c1, "a=1")

	if err := os.Symlink("a.yaml", filepath.Join(f.repo.Work, "manifests", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	f.repo.Commit("a symlinked manifest")
	f.repo.Push()
	if err := f.mustError(); !strings.Contains(err.Error(), "manifests/link.yaml is a symlink") {
		t.Fatalf("error %v, want one naming the symlink", err)
	}
	f.state(c1, "symlink", "a=1")

	f.repo.Remove("manifests")
	if err := os.Symlink("real", filepath.Join(f.repo.Work, "manifests")); err != nil {
		t.Fatal(err)
	}
	f.repo.Commit("the path is a symlink")
	f.repo.Push()
	if err := f.mustError(); !strings.Contains(err.Error(), `path "manifests"`) || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("error %v, want one saying the path is a symlink", err)
	}
	f.state(c1, "symlink", "a=1")

	f.repo.Remove("manifests")
	f.repo.Git("update-index", "--add", "--cacheinfo", "160000,"+c1+",manifests")
	f.repo.Git("commit", "--quiet", "-m", "the path is a submodule")
	f.repo.Push()
	if err := f.mustError(); !strings.Contains(err.Error(), `path "manifests"`) || !strings.Contains(err.Error(), "submodule") {
		t.Fatalf("error %v, want one saying the path is a submodule", err)
	}
	f.state(c1, "submodule", "a=1")

	if strings.Contains(f.logs.String(), "cloning again") {
		t.Error("a content error made the source clone its cache again")
	}
}

// TestHungServerTimesOut: a server that accepts connections and never
// answers fails the poll after the source's timeout (it does not hang).
func TestHungServerTimesOut(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // never answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-held:
				c.Close()
			default:
				return
			}
		}
	})
	f := newFixture(t, false)
	f.cfg.URL = "http://" + ln.Addr().String() + "/fleet.git"
	f.cfg.Timeout = time.Second
	f.start()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		u, ok := f.src.Poll(context.Background())
		if !ok || u.Err == nil {
			done <- fmt.Errorf("poll of a hung server: ok %v, err %v", ok, u.Err)
			return
		}
		done <- u.Err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, gitsource.ErrRepoAccess) {
			t.Fatalf("error %v, want ErrRepoAccess", err)
		}
		if !strings.Contains(err.Error(), "no answer within 1s") {
			t.Errorf("error %q does not say it timed out", err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("poll took %s with a 1s timeout", took)
		}
	case <-time.After(time.Minute):
		t.Fatal("poll of a hung server did not return within a minute (timeout 1s)")
	}
}
