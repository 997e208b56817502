package gittest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/hostlet/hostlet/internal/testkit/gittest"
)

// lsRemote lists url's refs with go-git, as the git source does.
func lsRemote(url string, auth transport.AuthMethod) (map[string]string, error) {
	rem := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.ListContext(context.Background(), &git.ListOptions{Auth: auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, r := range refs {
		out[r.Name().String()] = r.Hash().String()
	}
	return out, nil
}

func TestRepoCommitPushForcePushTagsAndBranches(t *testing.T) {
	t.Parallel()
	r := gittest.NewRepo(t)
	c1 := r.Change("one", map[string]string{"a/x.yaml": "x: 1\n", "b.yaml": "b\n"})
	c2 := r.Change("two", map[string]string{"a/x.yaml": "x: 2\n"}, "b.yaml")
	if c1 == c2 || len(c1) != 40 {
		t.Fatalf("commits %q %q", c1, c2)
	}
	if got := r.GitBare("rev-parse", "refs/heads/main"); got != c2 {
		t.Fatalf("bare main = %s, want %s", got, c2)
	}
	if got := r.GitBare("show", c2+":a/x.yaml"); got != "x: 2" {
		t.Fatalf("a/x.yaml at c2 = %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.Work, "b.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("b.yaml still in the work tree: %v", err)
	}
	if out := r.GitBare("ls-tree", "-r", "--name-only", c2); out != "a/x.yaml" {
		t.Fatalf("tree of c2 = %q, want only a/x.yaml", out)
	}
	if got := r.GitBare("log", "-1", "--format=%an <%ae> / %cn <%ce>", c2); got != "Hostlet Test <test@hostlet.invalid> / Hostlet Test <test@hostlet.invalid>" {
		t.Fatalf("author/committer = %q", got)
	}

	r.Tag("light", c1)
	tagObj := r.AnnotatedTag("heavy", c2, "release")
	r.PushBranch("other", c1)
	refs, err := lsRemote(r.FileURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"refs/heads/main": c2, "refs/heads/other": c1, "refs/tags/light": c1,
		"refs/tags/heavy": tagObj, "refs/tags/heavy^{}": c2,
	}
	for name, sha := range want {
		if refs[name] != sha {
			t.Errorf("%s = %q, want %s (all: %v)", name, refs[name], sha, refs)
		}
	}
	if tagObj == c2 {
		t.Error("annotated tag object has the commit's SHA")
	}

	r.ForcePush(c1)
	r.DeleteBranch("other")
	refs, err = lsRemote(r.FileURL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if refs["refs/heads/main"] != c1 {
		t.Errorf("main after force-push = %s, want %s", refs["refs/heads/main"], c1)
	}
	if _, ok := refs["refs/heads/other"]; ok {
		t.Error("branch other still there after DeleteBranch")
	}
}

func TestServerAuthCountsAndStop(t *testing.T) {
	t.Parallel()
	r := gittest.NewRepo(t)
	c1 := r.Change("one", map[string]string{"x.yaml": "x\n"})
	srv := gittest.Serve(t, r.Root, "ops", "s3cret")
	url := srv.RepoURL(r)

	refs, err := lsRemote(url, &githttp.BasicAuth{Username: "ops", Password: "s3cret"})
	if err != nil {
		t.Fatalf("ls-remote with the right password: %v", err)
	}
	if refs["refs/heads/main"] != c1 {
		t.Fatalf("main = %s, want %s", refs["refs/heads/main"], c1)
	}
	if c := srv.Counts(); c.InfoRefs != 1 || c.UploadPack != 0 || c.Other != 0 || c.Unauthorized != 0 {
		t.Fatalf("counts after one ls-remote: %+v", c)
	}

	_, err = lsRemote(url, &githttp.BasicAuth{Username: "ops", Password: "wrong"})
	if !errors.Is(err, transport.ErrAuthenticationRequired) {
		t.Fatalf("wrong password: %v, want ErrAuthenticationRequired", err)
	}
	if c := srv.Counts(); c.Unauthorized != 1 {
		t.Fatalf("counts after a wrong password: %+v", c)
	}

	// A full clone over HTTP: info/refs, then upload-pack.
	srv.ResetCounts()
	repo, err := git.Clone(memory.NewStorage(), nil, &git.CloneOptions{URL: url, Auth: &githttp.BasicAuth{Username: "ops", Password: "s3cret"}})
	if err != nil {
		t.Fatalf("clone: %v", err)
	}
	head, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil || head.Hash().String() != c1 {
		t.Fatalf("cloned main = %v, %v", head, err)
	}
	if c := srv.Counts(); c.InfoRefs != 1 || c.UploadPack < 1 {
		t.Fatalf("counts after a clone: %+v", c)
	}

	srv.Stop()
	if _, err := lsRemote(url, &githttp.BasicAuth{Username: "ops", Password: "s3cret"}); err == nil {
		t.Fatal("ls-remote of a stopped server worked")
	}
	srv.Start()
	if got := srv.RepoURL(r); got != url {
		t.Fatalf("restarted on %s, want %s", got, url)
	}
	if _, err := lsRemote(url, &githttp.BasicAuth{Username: "ops", Password: "s3cret"}); err != nil {
		t.Fatalf("ls-remote after Start: %v", err)
	}
}

func TestSignedCommitVerifies(t *testing.T) {
	t.Parallel()
	r := gittest.NewRepo(t)
	ours := gittest.NewKey(t, "Ops", "ops@hostlet.invalid")
	theirs := gittest.NewKey(t, "Mallory", "mallory@hostlet.invalid")
	keyring := string(gittest.ArmoredPublicKeys(t, ours))

	r.Write("x.yaml", "x\n")
	signed := r.CommitSigned("signed", ours)
	r.Write("x.yaml", "y\n")
	foreign := r.CommitSigned("foreign", theirs)
	r.Write("x.yaml", "z\n")
	unsigned := r.Commit("unsigned")
	r.Push()

	repo, err := git.PlainOpen(r.Bare)
	if err != nil {
		t.Fatal(err)
	}
	check := func(sha string) error {
		c, err := repo.CommitObject(plumbing.NewHash(sha))
		if err != nil {
			t.Fatal(err)
		}
		if c.PGPSignature == "" {
			return errors.New("not signed")
		}
		_, err = c.Verify(keyring)
		return err
	}
	if err := check(signed); err != nil {
		t.Errorf("signed commit: %v", err)
	}
	if err := check(foreign); err == nil {
		t.Error("commit signed by a foreign key verifies")
	}
	if err := check(unsigned); err == nil || err.Error() != "not signed" {
		t.Errorf("unsigned commit: %v", err)
	}
	// The CLI sees the same history.
	if got := r.GitBare("rev-list", "--count", "main"); got != "3" {
		t.Errorf("history length %s, want 3", got)
	}
}

func TestImport(t *testing.T) {
	t.Parallel()
	r := gittest.NewRepo(t)
	first := r.Change("seed", map[string]string{"keep.yaml": "k\n"})
	var commits []gittest.ImportCommit
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("m/%03d.yaml", i)] = fmt.Sprintf("i: %d\n", i)
	}
	commits = append(commits, gittest.ImportCommit{Message: "bulk", Write: files})
	for i := range 20 {
		commits = append(commits, gittest.ImportCommit{Message: fmt.Sprintf("edit %d", i), Write: map[string]string{"m/000.yaml": fmt.Sprintf("v: %d\n", i)}})
	}
	commits = append(commits, gittest.ImportCommit{Message: "drop", Delete: []string{"m/001.yaml"}})
	head := r.Import(commits)
	if got := r.GitBare("rev-list", "--count", "main"); got != "23" { // seed + bulk + 20 edits + drop
		t.Fatalf("history length %s, want 23", got)
	}
	if got := r.GitBare("rev-parse", "main"); got != head {
		t.Fatalf("main %s, Import returned %s", got, head)
	}
	if got := r.GitBare("rev-list", "--max-parents=0", "main"); got != first {
		t.Fatalf("root commit %s, want %s", got, first)
	}
	list := strings.Fields(r.GitBare("ls-tree", "-r", "--name-only", "main"))
	if len(list) != 50 { // keep.yaml + 50 - 1
		t.Fatalf("%d files at head, want 50", len(list))
	}
	if got := r.GitBare("show", "main:m/000.yaml"); got != "v: 19" {
		t.Fatalf("m/000.yaml = %q", got)
	}
	if _, err := os.Stat(filepath.Join(r.Work, "m", "049.yaml")); err != nil {
		t.Fatalf("work tree not moved to the imported head: %v", err)
	}
}
