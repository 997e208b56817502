package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// gitBackend is Debian's git http-backend.
const gitBackend = "/usr/lib/git-core/git-http-backend"

// gitEnv is the environment of every git command of the run: no system or
// user config leaks in, a fixed identity.
func gitEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=hostlet bench", "GIT_AUTHOR_EMAIL=bench@hostlet.invalid",
		"GIT_COMMITTER_NAME=hostlet bench", "GIT_COMMITTER_EMAIL=bench@hostlet.invalid",
		"GIT_TERMINAL_PROMPT=0",
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "GIT_"):
		default:
			env = append(env, kv)
		}
	}
	return env
}

// gitServer serves every bare repository under root over git's smart HTTP
// protocol on 127.0.0.1 (git http-backend run through net/http/cgi).
type gitServer struct {
	root string
	home string
	ln   net.Listener
	srv  *http.Server
}

func startGitServer(root, home string) (*gitServer, error) {
	if _, err := os.Stat(gitBackend); err != nil {
		return nil, fmt.Errorf("git http-backend: %w (apt-get install -y git)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := &gitServer{root: root, home: home, ln: ln}
	h := &cgi.Handler{
		Path: gitBackend,
		Dir:  root,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + home,
		},
	}
	g.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = g.srv.Serve(ln) }()
	return g, nil
}

// url is the clone URL of the bare repository root/name.
func (g *gitServer) url(name string) string { return "http://" + g.ln.Addr().String() + "/" + name }

func (g *gitServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = g.srv.Shutdown(ctx)
}

// repo is a bare repository served by a gitServer and a working clone that
// commits and pushes to it (through the file system).
type repo struct {
	name string
	bare string
	work string
	env  []string
}

func runGit(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s (in %s): %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// newRepo makes root/name.git (bare, branch main) and a working clone
// under workRoot with one first commit holding files.
func newRepo(ctx context.Context, g *gitServer, workRoot, name string, env []string, files map[string]string) (*repo, error) {
	r := &repo{name: name + ".git", bare: filepath.Join(g.root, name+".git"), work: filepath.Join(workRoot, name), env: env}
	if _, err := runGit(ctx, "", env, "init", "--quiet", "--bare", "-b", "main", r.bare); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, "", env, "init", "--quiet", "-b", "main", r.work); err != nil {
		return nil, err
	}
	if _, err := runGit(ctx, r.work, env, "remote", "add", "origin", r.bare); err != nil {
		return nil, err
	}
	if err := r.commit(ctx, "initial", files); err != nil {
		return nil, err
	}
	return r, r.push(ctx)
}

// commit makes the tree hold exactly files (paths relative to the
// repository) and commits it.
func (r *repo) commit(ctx context.Context, msg string, files map[string]string) error {
	entries, err := os.ReadDir(r.work)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() == ".git" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(r.work, e.Name())); err != nil {
			return err
		}
	}
	for p, content := range files {
		full := filepath.Join(r.work, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return err
		}
	}
	if _, err := runGit(ctx, r.work, r.env, "add", "-A"); err != nil {
		return err
	}
	_, err = runGit(ctx, r.work, r.env, "commit", "--quiet", "--allow-empty", "-m", msg)
	return err
}

func (r *repo) push(ctx context.Context) error {
	_, err := runGit(ctx, r.work, r.env, "push", "--quiet", "origin", "main")
	return err
}

func (r *repo) head(ctx context.Context) (string, error) {
	return runGit(ctx, r.work, r.env, "rev-parse", "HEAD")
}

// clone clones the repository over HTTP into dir.
func (r *repo) clone(ctx context.Context, g *gitServer, dir string) error {
	if _, err := runGit(ctx, "", r.env, "clone", "--quiet", g.url(r.name), dir); err != nil {
		return err
	}
	if _, err := runGit(ctx, dir, r.env, "config", "pull.ff", "only"); err != nil {
		return errors.Join(err, os.RemoveAll(dir))
	}
	return nil
}
