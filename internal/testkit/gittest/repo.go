package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Author and committer of every commit the helpers make.
const (
	AuthorName  = "Hostlet Test"
	AuthorEmail = "test@hostlet.invalid"
)

// Repo is a bare repository (what a server serves) and a working clone of
// it (where the test edits, commits and pushes from).
type Repo struct {
	t testing.TB
	// Root is the folder holding the bare repository: the GIT_PROJECT_ROOT
	// of a Server.
	Root string
	// Name is the bare repository's folder name inside Root ("fleet.git").
	Name string
	// Bare is Root/Name.
	Bare string
	// Work is the working clone.
	Work string
	// Branch is the branch Push and ForcePush update ("main").
	Branch string

	env []string
}

// NewRepo makes an empty bare repository "fleet.git" in a new temporary
// folder, and a working clone of it on branch main.
func NewRepo(t testing.TB) *Repo {
	t.Helper()
	return NewRepoIn(t, t.TempDir(), "fleet.git")
}

// NewRepoIn makes an empty bare repository root/name (several may share one
// root, and so one Server) and a working clone of it on branch main.
func NewRepoIn(t testing.TB, root, name string) *Repo {
	t.Helper()
	home := t.TempDir()
	r := &Repo{
		t: t, Root: root, Name: name, Bare: filepath.Join(root, name),
		Work: filepath.Join(t.TempDir(), "work"), Branch: "main",
		env: Env(home),
	}
	r.run("", "init", "--quiet", "--bare", "-b", r.Branch, r.Bare)
	r.run("", "init", "--quiet", "-b", r.Branch, r.Work)
	r.Git("remote", "add", "origin", r.Bare)
	return r
}

// Env is the environment the helpers run git with: the process environment
// without any GIT_* variable, with HOME set to home, no system config, no
// prompts, and a fixed author and committer.
func Env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME="+AuthorName, "GIT_AUTHOR_EMAIL="+AuthorEmail,
		"GIT_COMMITTER_NAME="+AuthorName, "GIT_COMMITTER_EMAIL="+AuthorEmail,
		"LC_ALL=C",
	)
}

// FileURL is the file:// URL of the bare repository.
func (r *Repo) FileURL() string { return "file://" + filepath.ToSlash(r.Bare) }

func (r *Repo) run(dir string, args ...string) string {
	r.t.Helper()
	out, err := r.runErr(dir, nil, args...)
	if err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
	return out
}

func (r *Repo) runErr(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = r.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s (in %s): %v\n%s%s", strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Git runs git in the working clone and returns its trimmed output; a
// failure fails the test.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	return r.run(r.Work, args...)
}

// GitBare runs git in the bare repository.
func (r *Repo) GitBare(args ...string) string {
	r.t.Helper()
	return r.run(r.Bare, args...)
}

// Write writes a file (path relative to the repository, slash-separated) in
// the working clone, making its folders.
func (r *Repo) Write(path, content string) {
	r.t.Helper()
	full := filepath.Join(r.Work, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
}

// Remove deletes a file or a folder from the working clone.
func (r *Repo) Remove(path string) {
	r.t.Helper()
	full := filepath.Join(r.Work, filepath.FromSlash(path))
	if _, err := os.Lstat(full); err != nil {
		r.t.Fatalf("gittest: remove %s: %v", path, err)
	}
	if err := os.RemoveAll(full); err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
}

// Commit stages every change in the working clone (new, changed and
// deleted files) and commits it. It returns the commit's full SHA.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "--all")
	r.Git("commit", "--quiet", "--no-gpg-sign", "-m", msg)
	return r.Head()
}

// Change writes files, removes paths, commits and pushes; it returns the
// new commit's SHA.
func (r *Repo) Change(msg string, write map[string]string, remove ...string) string {
	r.t.Helper()
	for p, c := range write {
		r.Write(p, c)
	}
	for _, p := range remove {
		r.Remove(p)
	}
	sha := r.Commit(msg)
	r.Push()
	return sha
}

// CommitSigned stages every change and commits it signed by key (an
// OpenPGP entity with its private key, from NewKey), through go-git. It
// returns the commit's SHA. The commit is not pushed.
func (r *Repo) CommitSigned(msg string, key *openpgp.Entity) string {
	r.t.Helper()
	r.Git("add", "--all")
	repo, err := git.PlainOpen(r.Work)
	if err != nil {
		r.t.Fatalf("gittest: open %s: %v", r.Work, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		r.t.Fatalf("gittest: %v", err)
	}
	sig := &object.Signature{Name: AuthorName, Email: AuthorEmail, When: time.Now()}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, SignKey: key})
	if err != nil {
		r.t.Fatalf("gittest: signed commit: %v", err)
	}
	if got := r.Head(); got != h.String() {
		r.t.Fatalf("gittest: signed commit %s is not HEAD (%s)", h, got)
	}
	return h.String()
}

// Head is the SHA of the working clone's HEAD.
func (r *Repo) Head() string {
	r.t.Helper()
	return r.Git("rev-parse", "HEAD")
}

// Push pushes the working clone's HEAD to Branch.
func (r *Repo) Push() {
	r.t.Helper()
	r.Git("push", "--quiet", "origin", "HEAD:refs/heads/"+r.Branch)
}

// ForcePush resets the working clone to rev (an older commit) and
// force-pushes it to Branch: the branch moves back.
func (r *Repo) ForcePush(rev string) {
	r.t.Helper()
	r.Git("reset", "--quiet", "--hard", rev)
	r.Git("push", "--quiet", "--force", "origin", "HEAD:refs/heads/"+r.Branch)
}

// PushBranch pushes rev to branch name.
func (r *Repo) PushBranch(name, rev string) {
	r.t.Helper()
	r.Git("push", "--quiet", "--force", "origin", rev+":refs/heads/"+name)
}

// DeleteBranch deletes branch name on the server (the bare repository).
func (r *Repo) DeleteBranch(name string) {
	r.t.Helper()
	r.Git("push", "--quiet", "origin", "--delete", "refs/heads/"+name)
}

// Tag makes a lightweight tag name at rev and pushes it.
func (r *Repo) Tag(name, rev string) {
	r.t.Helper()
	r.Git("tag", name, rev)
	r.Git("push", "--quiet", "origin", "refs/tags/"+name)
}

// AnnotatedTag makes an annotated tag name at rev, pushes it, and returns
// the SHA of the tag object (not of the commit).
func (r *Repo) AnnotatedTag(name, rev, msg string) string {
	r.t.Helper()
	r.Git("tag", "-a", "-m", msg, name, rev)
	r.Git("push", "--quiet", "origin", "refs/tags/"+name)
	return r.Git("rev-parse", "refs/tags/"+name)
}
