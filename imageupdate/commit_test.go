package imageupdate_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hostlet/hostlet/imageupdate"
	"github.com/hostlet/hostlet/internal/testkit/gittest"
)

// One commit, signed with the key given, listing every move, pushed to
// the branch asked for; a bad branch name or a key with a passphrase is
// refused before anything is pushed.
func TestCommitSignsListsAndPushes(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Change("first", map[string]string{"apps/web.yaml": "image: r/web:1.4.2\n"})
	key := gittest.NewKey(t, "CI", "ci@example.org")
	keyFile := filepath.Join(t.TempDir(), "key.asc")
	writeArmoredPrivate(t, keyFile, key)

	repo.Write("apps/web.yaml", "image: r/web:1.4.3\n")
	us := []imageupdate.Update{{Target: imageupdate.Target{File: "web.yaml", Pod: "web", Container: "app"}, Repository: "r/web", From: "1.4.2", To: "1.4.3"}}
	dir := filepath.Join(repo.Work, "apps")
	t.Setenv("HOME", t.TempDir())
	if _, err := imageupdate.Commit(t.Context(), dir, []string{"web.yaml"}, us, imageupdate.CommitOptions{Branch: "x:refs/heads/main", Push: true}); err == nil {
		t.Error("a refspec as the branch: no error")
	}
	hash, err := imageupdate.Commit(t.Context(), dir, []string{"web.yaml"}, us, imageupdate.CommitOptions{SignKey: keyFile, Branch: "hostlet/image-updates", Push: true})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := git.PlainOpen(repo.Bare)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := bare.Reference(plumbing.NewBranchReferenceName("hostlet/image-updates"), true)
	if err != nil || ref.Hash().String() != hash {
		t.Fatalf("branch hostlet/image-updates in the bare repository: %v, %v; want %s", ref, err, hash)
	}
	c, err := bare.CommitObject(ref.Hash())
	if err != nil {
		t.Fatal(err)
	}
	if want := "web.yaml web/app: r/web 1.4.2 -> 1.4.3"; !strings.Contains(c.Message, want) {
		t.Errorf("message %q, want a line %q", c.Message, want)
	}
	if _, err := c.Verify(string(gittest.ArmoredPublicKeys(t, key))); err != nil {
		t.Errorf("the commit's signature does not verify: %v", err)
	}
	if main := strings.TrimSpace(gitOut(t, repo.Bare, "rev-parse", "main")); main == hash {
		t.Error("main moved: only the branch asked for is pushed")
	}
}

func writeArmoredPrivate(t *testing.T, file string, key *openpgp.Entity) {
	t.Helper()
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PrivateKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.SerializePrivate(w, nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// The updater's branch is replaced each run when asked (the pull request
// not merged yet, a newer tag): the second night's push goes through.
// Without --replace-branch, and from a detached HEAD or onto main, no
// push is ever forced.
func TestCommitReplacesItsOwnBranch(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Change("first", map[string]string{"web.yaml": "image: r/web:1.4.2\n"})
	t.Setenv("HOME", t.TempDir())
	opts := imageupdate.CommitOptions{Branch: "hostlet/image-updates", Push: true, ReplaceBranch: true}
	var hashes []string
	for _, tag := range []string{"1.4.3", "1.4.4"} {
		clone := filepath.Join(t.TempDir(), "clone")
		gitOut(t, filepath.Dir(clone), "clone", "--quiet", repo.Bare, clone)
		if err := os.WriteFile(filepath.Join(clone, "web.yaml"), []byte("image: r/web:"+tag+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		us := []imageupdate.Update{{Target: imageupdate.Target{File: "web.yaml", Pod: "web", Container: "app"}, Repository: "r/web", From: "1.4.2", To: tag}}
		hash, err := imageupdate.Commit(t.Context(), clone, []string{"web.yaml"}, us, opts)
		if err != nil {
			t.Fatalf("night with %s: %v", tag, err)
		}
		hashes = append(hashes, hash)
	}
	if got := strings.TrimSpace(gitOut(t, repo.Bare, "rev-parse", "hostlet/image-updates")); got != hashes[1] {
		t.Errorf("the branch is at %s, want the second night's %s", got, hashes[1])
	}
}

func TestCommitNeverForcesOtherwise(t *testing.T) {
	repo := gittest.NewRepo(t)
	repo.Change("first", map[string]string{"web.yaml": "image: r/web:1.4.2\n"})
	t.Setenv("HOME", t.TempDir())
	us := []imageupdate.Update{{Target: imageupdate.Target{File: "web.yaml", Pod: "web", Container: "app"}, Repository: "r/web", From: "1.4.2", To: "1.4.3"}}
	clone := func(detach bool) string {
		dir := filepath.Join(t.TempDir(), "clone")
		gitOut(t, filepath.Dir(dir), "clone", "--quiet", repo.Bare, dir)
		if detach {
			gitOut(t, dir, "checkout", "--quiet", "--detach")
		}
		if err := os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("image: r/web:1.4.3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// Every clone is made before a colleague pushes to main: none may
	// take main back.
	cases := []struct {
		name string
		dir  string
		opts imageupdate.CommitOptions
	}{
		{name: "onto main from a stale clone", dir: clone(false), opts: imageupdate.CommitOptions{Push: true}},
		{name: "detached, --branch main", dir: clone(true), opts: imageupdate.CommitOptions{Push: true, Branch: "main"}},
		{name: "detached, replacing main", dir: clone(true), opts: imageupdate.CommitOptions{Push: true, Branch: "main", ReplaceBranch: true}},
		{name: "detached, replacing its branch", dir: clone(true), opts: imageupdate.CommitOptions{Push: true, Branch: "hostlet/x", ReplaceBranch: true}},
	}
	repo.Change("a colleague's commit", map[string]string{"other.yaml": "x: 1\n"})
	main := strings.TrimSpace(gitOut(t, repo.Bare, "rev-parse", "main"))
	for _, tc := range cases {
		if _, err := imageupdate.Commit(t.Context(), tc.dir, []string{"web.yaml"}, us, tc.opts); err == nil {
			t.Errorf("%s: pushed", tc.name)
		}
		if got := strings.TrimSpace(gitOut(t, repo.Bare, "rev-parse", "main")); got != main {
			t.Fatalf("%s: main moved from %s to %s", tc.name, main, got)
		}
	}
}
