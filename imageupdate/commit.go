package imageupdate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// DefaultMessage is the commit message template: .Updates are the due
// updates (Update), one line each.
const DefaultMessage = `images: {{len .Updates}} moved by policy
{{range .Updates}}
{{.Target.File}} {{.Target.Pod}}/{{.Target.Container}}: {{.Repository}} {{.From}} -> {{.To}}{{if .Digest}} ({{.Digest}}){{end}}{{end}}
`

// CommitOptions say how the edits are committed and pushed.
type CommitOptions struct {
	// Message is a text/template (DefaultMessage when empty).
	Message string
	// SignKey is an armored OpenPGP private key file to sign with.
	SignKey string
	// Branch is the branch pushed to ("" for the checked-out one).
	Branch string
	// Push: push the commit to the remote origin (git push, so the
	// credentials the machine's git has are used).
	Push bool
	// ReplaceBranch lets the push replace Branch (the updater's own, a
	// pull request's head, made anew each run) with a lease on what the
	// remote had just before; refused for the checked-out branch, a
	// detached HEAD, main and master.
	ReplaceBranch bool
}

// Commit commits the files (paths in the source at dir) in dir's
// repository with one message listing every due update, and pushes it
// when asked. It returns the commit's hash.
func Commit(ctx context.Context, dir string, files []string, us []Update, opts CommitOptions) (string, error) {
	if err := opts.Check(); err != nil {
		return "", err
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return "", fmt.Errorf("the source %s is not in a git repository: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	rel, err := inRepo(wt.Filesystem.Root(), dir)
	if err != nil {
		return "", err
	}
	for _, f := range slices.Sorted(slices.Values(files)) {
		if _, err := wt.Add(path.Join(rel, f)); err != nil {
			return "", fmt.Errorf("git add %s: %w", f, err)
		}
	}
	msg, err := commitMessage(opts.Message, us)
	if err != nil {
		return "", err
	}
	co := &git.CommitOptions{Author: author(repo)}
	if opts.SignKey != "" {
		if co.SignKey, err = readSignKey(opts.SignKey); err != nil {
			return "", err
		}
	}
	hash, err := wt.Commit(msg, co)
	if err != nil {
		return "", fmt.Errorf("git commit: %w", err)
	}
	if opts.Push {
		if err := push(ctx, wt.Filesystem.Root(), repo, opts); err != nil {
			return hash.String(), err
		}
	}
	return hash.String(), nil
}

// Check refuses options that would fail only after the files are edited:
// a bad branch name, a message template that does not parse, a sign key
// that cannot be used.
func (o CommitOptions) Check() error {
	if o.Branch != "" && !branchName.MatchString(o.Branch) {
		return fmt.Errorf("--branch %q: not a branch name", o.Branch)
	}
	if o.ReplaceBranch && (o.Branch == "" || o.Branch == "main" || o.Branch == "master") {
		return fmt.Errorf("--replace-branch needs --branch naming the updater's own branch (not main or master)")
	}
	if _, err := commitMessage(o.Message, nil); err != nil {
		return err
	}
	if o.SignKey != "" {
		if _, err := readSignKey(o.SignKey); err != nil {
			return err
		}
	}
	return nil
}

// Prepare checks, before any file is edited, what Commit will need: the
// source at dir in a git repository whose index holds nothing staged (it
// would go into the commit), and a message the template makes from us.
func Prepare(dir string, us []Update, opts CommitOptions) error {
	if err := opts.Check(); err != nil {
		return err
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return fmt.Errorf("the source %s is not in a git repository: %w", dir, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if _, err := inRepo(wt.Filesystem.Root(), dir); err != nil {
		return err
	}
	st, err := wt.Status()
	if err != nil {
		return fmt.Errorf("git status: %w", err)
	}
	for _, f := range slices.Sorted(maps.Keys(st)) {
		if s := st[f].Staging; s != git.Unmodified && s != git.Untracked {
			return fmt.Errorf("the index of %s has changes staged (%s): they would go into the commit; commit or reset them first", wt.Filesystem.Root(), f)
		}
	}
	_, err = commitMessage(opts.Message, us)
	return err
}

// inRepo is dir's path inside the work tree at root ("." for the root).
func inRepo(root, dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("the source %s is outside its repository %s", dir, root)
	}
	return filepath.ToSlash(rel), nil
}

func commitMessage(text string, us []Update) (string, error) {
	if text == "" {
		text = DefaultMessage
	}
	tmpl, err := template.New("message").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("--message-template: %w", err)
	}
	var due []Update
	for _, u := range us {
		if u.Due() {
			due = append(due, u)
		}
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, struct{ Updates []Update }{due}); err != nil {
		return "", fmt.Errorf("--message-template: %w", err)
	}
	return b.String(), nil
}

// author is the repository's git user (its config, then the user's),
// else hostlet images.
func author(repo *git.Repository) *object.Signature {
	sig := &object.Signature{Name: "hostlet images", Email: "hostlet-images@localhost", When: time.Now()}
	if cfg, err := repo.ConfigScoped(gitconfig.GlobalScope); err == nil {
		if cfg.User.Name != "" {
			sig.Name = cfg.User.Name
		}
		if cfg.User.Email != "" {
			sig.Email = cfg.User.Email
		}
	}
	return sig
}

// readSignKey reads an armored OpenPGP private key without a passphrase.
func readSignKey(file string) (*openpgp.Entity, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--sign-key: %w", err)
	}
	keys, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: not an armored OpenPGP key: %w", file, err)
	}
	for _, k := range keys {
		if k.PrivateKey == nil {
			continue
		}
		if k.PrivateKey.Encrypted {
			return nil, fmt.Errorf("--sign-key %s: the key is protected by a passphrase", file)
		}
		return k, nil
	}
	return nil, fmt.Errorf("--sign-key %s: no private key", file)
}

// branchName is a branch name --branch takes: no option, no refspec.
var branchName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/-]{0,199}$`)

// push pushes HEAD to opts.Branch (the checked-out one when "") of
// origin with the git command, so that the machine's credential helpers
// apply; never forced, but with ReplaceBranch, which leases the branch.
func push(ctx context.Context, root string, repo *git.Repository, opts CommitOptions) error {
	branch := opts.Branch
	current := ""
	if head, err := repo.Head(); err == nil && head.Name().IsBranch() {
		current = head.Name().Short()
	}
	args := []string{"-C", root, "push", "--quiet", "origin"}
	switch {
	case branch == "" && current == "":
		return errors.New("git push: no branch checked out; give --branch")
	case branch == "":
		branch = current
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if opts.ReplaceBranch {
		if current == "" || branch == current {
			return fmt.Errorf("--replace-branch %s: only from a checked-out branch other than it", branch)
		}
		// Replaced only if it is still what the remote has now: a push
		// of someone else's in between is not lost.
		out, err := exec.CommandContext(ctx, "git", "-C", root, "ls-remote", "origin", "refs/heads/"+branch).Output()
		if err != nil {
			return fmt.Errorf("git ls-remote origin %s: %w", branch, err)
		}
		had, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
		args = append(args, "--force-with-lease=refs/heads/"+branch+":"+had)
	}
	cmd := exec.CommandContext(ctx, "git", append(args, "HEAD:refs/heads/"+branch)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git push origin HEAD:%s: %w: %s", branch, err, lastLines(string(out)))
	}
	return nil
}

// lastLines is the end of a command's output (where git says why), at
// most 1 KiB, on one line.
func lastLines(out string) string {
	out = strings.TrimSpace(out)
	if len(out) > 1<<10 {
		out = "..." + out[len(out)-1<<10:]
	}
	return strings.Join(strings.Fields(out), " ")
}
