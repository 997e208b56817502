// Package registrytest runs a real container registry for tests: Debian's
// docker-registry (distribution 2.8) on 127.0.0.1 at a free port, its
// storage in the test's temporary folder, optionally behind a password,
// and pushes images to it through the Engine API.
package registrytest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/client"
	"golang.org/x/crypto/bcrypt"

	"github.com/hostlet/hostlet/internal/imagetar"
	"github.com/hostlet/hostlet/internal/testkit"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// Registry is a running registry.
type Registry struct {
	// Addr is host:port, 127.0.0.1 and the port it listens on.
	Addr string
	// User and Password guard it when set.
	User, Password string
}

// Options of Start.
type Options struct {
	// User and Password put the registry behind htpasswd auth.
	User, Password string
}

// Start runs docker-registry until the test ends.
func Start(t testing.TB, opts Options) *Registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Fatal("registrytest: docker-registry not found (apt-get install docker-registry; make test installs it as root)")
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	auth := ""
	if opts.User != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(opts.Password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(file, []byte(opts.User+":"+string(hash)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd: {realm: hostlet-test, path: %s}\n", file)
	}
	cfg := fmt.Sprintf("version: 0.1\nlog: {level: error, accesslog: {disabled: true}}\nstorage:\n  filesystem: {rootdirectory: %s}\n  delete: {enabled: true}\nhttp:\n  addr: %s\n%s",
		filepath.Join(dir, "data"), addr, auth)
	cfgFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("registrytest: start docker-registry: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
		select {
		case <-exited:
			t.Fatalf("registrytest: docker-registry exited: %s", logs.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/v2/")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized, resp.Status
	})
	return &Registry{Addr: addr, User: opts.User, Password: opts.Password}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// DockerConfig writes a Docker config folder holding the registry's
// credentials and returns it (for DOCKER_CONFIG).
func (r *Registry) DockerConfig(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	cfg := map[string]any{"auths": map[string]any{r.Addr: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(r.User + ":" + r.Password))}}}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Push builds a tiny image for each tag (a file naming it, so every tag
// has its own digest unless files says otherwise), pushes it as
// r.Addr/repo:tag through the Engine API and removes it from the engine.
// files, when not nil, gives a tag's image the file content of another
// key (two tags of one image). It returns the digest of each tag.
func (r *Registry) Push(t testing.TB, cli *client.Client, repo string, tags []string, files map[string]string) map[string]string {
	t.Helper()
	digests := map[string]string{}
	for _, tag := range tags {
		content := tag
		if c, ok := files[tag]; ok {
			content = c
		}
		digests[tag] = r.PushImage(t, cli, repo+":"+tag, []imagetar.File{{Path: "/version", Mode: 0o644, Data: []byte(content)}},
			imagetar.Config{Entrypoint: []string{"/version"}})
	}
	return digests
}

// PushImage builds an image of files and cfg, pushes it as r.Addr/ref
// (repo:tag) through the Engine API, removes it from the engine and
// returns its digest.
func (r *Registry) PushImage(t testing.TB, cli *client.Client, ref string, files []imagetar.File, cfg imagetar.Config) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ref = r.Addr + "/" + ref
	var archive bytes.Buffer
	if err := imagetar.WriteConfig(&archive, ref, files, cfg); err != nil {
		t.Fatal(err)
	}
	if err := hruntime.LoadArchive(ctx, cli, &archive); err != nil {
		t.Fatalf("registrytest: load %s: %v", ref, err)
	}
	digest := r.pushLoaded(ctx, t, cli, ref)
	if _, err := cli.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil {
		t.Errorf("registrytest: remove %s: %v", ref, err)
	}
	return digest
}

// pushLoaded pushes ref and returns the digest the push reported.
func (r *Registry) pushLoaded(ctx context.Context, t testing.TB, cli *client.Client, ref string) string {
	t.Helper()
	auth := ""
	if r.User != "" {
		data, _ := json.Marshal(registry.AuthConfig{Username: r.User, Password: r.Password, ServerAddress: r.Addr})
		auth = base64.URLEncoding.EncodeToString(data)
	}
	rc, err := cli.ImagePush(ctx, ref, image.PushOptions{RegistryAuth: auth})
	if err != nil {
		t.Fatalf("registrytest: push %s: %v", ref, err)
	}
	defer rc.Close()
	out, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("registrytest: push %s: %v", ref, err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	digest := ""
	for {
		var msg struct {
			Error string `json:"error"`
			Aux   struct {
				Digest string `json:"Digest"`
			} `json:"aux"`
		}
		if err := dec.Decode(&msg); err != nil {
			break
		}
		if msg.Error != "" {
			t.Fatalf("registrytest: push %s: %s", ref, msg.Error)
		}
		if msg.Aux.Digest != "" {
			digest = msg.Aux.Digest
		}
	}
	if !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("registrytest: push %s: no digest in %s", ref, out)
	}
	return digest
}

// Serve runs h on 127.0.0.1 at a free port until the test ends and
// returns its host:port: a registry that misbehaves as a test wants.
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}
