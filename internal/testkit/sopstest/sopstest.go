// Package sopstest makes what tests of SOPS secrets need: the
// hostlet-sops helper built from cmd/hostlet-sops, age keys made by
// Debian's age-keygen, and files encrypted by the sops CLI (both installed
// by scripts/ensure-deps.sh --test).
package sopstest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Helper builds cmd/hostlet-sops (a module of its own) into a folder of t
// and returns its path.
func Helper(t testing.TB) string {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("sopstest: go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	out := filepath.Join(t.TempDir(), "hostlet-sops")
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	cmd.Dir = filepath.Join(root, "cmd", "hostlet-sops")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sopstest: go build cmd/hostlet-sops: %v\n%s", err, b)
	}
	return out
}

// Tool returns the path of a program the tests need: on PATH, else in
// Go's bin folder (where scripts/ensure-deps.sh --test installs sops).
func Tool(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if gopath, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("%s is missing: run scripts/ensure-deps.sh --test (Debian's age package; go install github.com/getsops/sops/v3/cmd/sops@v3.13.3)", name)
	return ""
}

// Key is an age key made for a test: its identity file (mode 0600) and
// its public recipient.
type Key struct {
	File      string
	Recipient string
}

// NewKey makes an age key in a folder of t.
func NewKey(t testing.TB) Key {
	t.Helper()
	p := filepath.Join(t.TempDir(), "age.key")
	if out, err := exec.Command(Tool(t, "age-keygen"), "-o", p).CombinedOutput(); err != nil {
		t.Fatalf("age-keygen: %v: %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{File: p}
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "# public key: "); ok {
			k.Recipient = r
		}
	}
	if k.Recipient == "" {
		t.Fatalf("age-keygen wrote no public key: %s", p)
	}
	return k
}

// Encrypt encrypts plain, as a file named name (its extension gives sops
// the format), for the recipients, with the sops CLI's extra args; sops
// runs with no configuration file and no key in its environment.
func Encrypt(t testing.TB, name string, plain []byte, recipients []string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, filepath.Base(name))
	if err := os.WriteFile(p, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string{"encrypt", "--age", strings.Join(recipients, ",")}, args...), p)
	cmd := exec.Command(Tool(t, "sops"), argv...)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sops encrypt %s: %v: %s", name, err, stderr.String())
	}
	return out
}
