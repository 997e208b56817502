package gitsource_test

import (
	"bytes"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/hostlet/hostlet/gitsource"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
)

// secretForms are the spellings a credential may take in a URL, a log line
// or a file.
func secretForms(s string) []string {
	var out []string
	for _, f := range []string{s, url.QueryEscape(s), url.PathEscape(s), url.User(s).String()} {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// findInTree returns every file under dir (binary ones included) that holds
// one of the secrets, with the secret found.
func findInTree(t *testing.T, dir string, secrets ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				found = append(found, p+": "+s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestURLCredentialsNeverShownNorStored: a token used as the URL's user
// name (https://TOKEN@host/repo.git, GitHub's style) or as its password
// (user:TOKEN@) is sent to the server, and appears in no log line, no
// error, no source status and no file under stateDir (the cache's
// git/NAME/config included).
func TestURLCredentialsNeverShownNorStored(t *testing.T) {
	t.Parallel()
	const token = "ghp_T0kenAsUser-8b1f2a9c"
	const password = "pw-In-Url-5e7d0c3b"
	tests := []struct {
		name     string
		user, pw string
		userinfo *url.Userinfo
		secrets  []string
	}{
		{name: "token as user name", user: token, userinfo: url.User(token), secrets: []string{token}},
		{name: "token as password", user: "ops", pw: password, userinfo: url.UserPassword("ops", password), secrets: []string{password}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := gittest.NewRepo(t)
			srv := gittest.Serve(t, r.Root, tc.user, tc.pw)
			c1 := r.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
			host := strings.TrimPrefix(srv.URL(), "http://")
			raw := "http://" + tc.userinfo.String() + "@" + host + "/" + r.Name
			f := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(raw), stateDir: t.TempDir()}
			f.start().mustUpdate(c1, "a=1")
			if n := srv.Counts().Unauthorized; n != 0 {
				t.Errorf("%d requests answered 401: the URL's credentials were not sent", n)
			}

			// Errors that name the URL: server down, a missing repository.
			var texts []string
			srv.Stop()
			texts = append(texts, f.mustError().Error())
			srv.Start()
			c2 := r.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
			f.mustUpdate(c2, "a=2")
			f3 := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(strings.Replace(raw, r.Name, "nope.git", 1)), stateDir: t.TempDir()}
			f3.start()
			err := f3.mustError()
			if !errors.Is(err, gitsource.ErrRepoAccess) || !strings.Contains(err.Error(), host) {
				t.Errorf("missing repository: %v, want a repository error naming %s", err, host)
			}
			texts = append(texts, err.Error(), f.logs.String(), f3.logs.String())
			for _, fx := range []*fixture{f, f3} {
				for _, st := range fx.merger.State().Sources {
					texts = append(texts, st.Error)
				}
			}
			var forms []string
			for _, s := range tc.secrets {
				forms = append(forms, secretForms(s)...)
			}
			for _, text := range texts {
				for _, s := range forms {
					if strings.Contains(text, s) {
						t.Errorf("secret %q shown in %q", s, text)
					}
				}
			}
			for _, dir := range []string{f.stateDir, f3.stateDir} {
				for _, hit := range findInTree(t, dir, forms...) {
					t.Errorf("secret stored under stateDir: %s", hit)
				}
			}
		})
	}
}

// TestCacheWithCredentialsInRemoteIsRewritten: a cache made by an earlier
// hostlet, whose remote URL in git/NAME/config holds the URL's password, is
// rewritten without it on the next fetch, and kept (not cloned again).
func TestCacheWithCredentialsInRemoteIsRewritten(t *testing.T) {
	t.Parallel()
	const password = "pw-Old-Cache-4c9e1d"
	r := gittest.NewRepo(t)
	srv := gittest.Serve(t, r.Root, "ops", password)
	c1 := r.Change("first", map[string]string{"manifests/a.yaml": podYAML("a", "1")})
	raw := "http://" + url.UserPassword("ops", password).String() + "@" + strings.TrimPrefix(srv.URL(), "http://") + "/" + r.Name
	f := &fixture{t: t, repo: r, srv: srv, cfg: gitConfig(raw), stateDir: t.TempDir()}
	f.start().mustUpdate(c1, "a=1")

	// What the earlier release left: the remote URL with the password.
	repo, err := git.PlainOpen(f.cacheDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := repo.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Remotes["origin"].URLs = []string{raw}
	if err := repo.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if hits := findInTree(t, f.stateDir, password); len(hits) == 0 {
		t.Fatal("the simulated old cache does not hold the password")
	}
	marker := filepath.Join(f.cacheDir(), "objects", "kept-marker")
	testkit.WriteFile(t, marker, "the cache was not cloned again")

	c2 := r.Change("second", map[string]string{"manifests/a.yaml": podYAML("a", "2")})
	f2 := &fixture{t: t, repo: r, srv: srv, cfg: f.cfg, stateDir: f.stateDir}
	f2.start().mustUpdate(c2, "a=2")
	for _, hit := range findInTree(t, f.stateDir, secretForms(password)...) {
		t.Errorf("secret still stored: %s", hit)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the cache was cloned again (marker gone: %v)", err)
	}
	f2.cacheHealthy(c2)
}
