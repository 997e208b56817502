package main

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// keys are the identities a test encrypts for and decrypts with.
type keys struct {
	dir       string
	ageID     string // an age identity file's text
	ageRecip  string
	wrongID   string
	sshEd     []byte
	sshEdPub  string
	sshRSA    []byte
	sshRSAPub string
}

// tool returns the path of a program the tests need: on PATH, else in
// Go's bin folder (where scripts/ensure-deps.sh --test installs sops).
func tool(t *testing.T, name string) string {
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

func newKeys(t *testing.T) keys {
	t.Helper()
	k := keys{dir: t.TempDir()}
	k.ageID, k.ageRecip = ageKey(t, k.dir, "host.key")
	k.wrongID, _ = ageKey(t, k.dir, "other.key")
	k.sshEd, k.sshEdPub = sshKey(t, k.dir, "ed25519")
	k.sshRSA, k.sshRSAPub = sshKey(t, k.dir, "rsa")
	return k
}

func ageKey(t *testing.T, dir, name string) (identity, recipient string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if out, err := exec.Command(tool(t, "age-keygen"), "-o", p).CombinedOutput(); err != nil {
		t.Fatalf("age-keygen: %v: %s", err, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(line, "# public key: "); ok {
			recipient = r
		}
	}
	return string(b), recipient
}

func sshKey(t *testing.T, dir, kind string) (private []byte, public string) {
	t.Helper()
	p := filepath.Join(dir, "id_"+kind)
	if out, err := exec.Command(tool(t, "ssh-keygen"), "-q", "-t", kind, "-N", "", "-C", "", "-f", p).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v: %s", err, out)
	}
	priv, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(p + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return priv, strings.TrimSpace(string(pub))
}

// encrypt encrypts plain, saved as name, with the sops CLI for the
// recipients (comma-separated), with sops's extra arguments; sops runs
// with no configuration file and no key in its environment.
func encrypt(t *testing.T, name string, plain []byte, recipients string, args ...string) []byte {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, plain, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool(t, "sops"), append(append([]string{"encrypt", "--age", recipients}, args...), p)...)
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

// sopsDecrypt is the sops CLI's own plaintext of data, the reference.
func sopsDecrypt(t *testing.T, name string, data []byte, identity string) []byte {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, name)
	kf := filepath.Join(dir, "key")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kf, []byte(identity), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool(t, "sops"), "decrypt", p)
	cmd.Dir = dir
	cmd.Env = []string{"HOME=" + dir, "SOPS_AGE_KEY_FILE=" + kf}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sops decrypt %s: %v: %s", name, err, out)
	}
	return out
}

// ask runs serve on req and returns its answer.
func ask(t *testing.T, req Request) Answer {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := serve(bytes.NewReader(in), &out); err != nil {
		t.Fatalf("serve: %v", err)
	}
	var ans Answer
	if err := json.Unmarshal(out.Bytes(), &ans); err != nil {
		t.Fatalf("answer %q: %v", out.String(), err)
	}
	if len(ans.Files) != len(req.Files) {
		t.Fatalf("%d results for %d files", len(ans.Files), len(req.Files))
	}
	return ans
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDecryptsEveryFormatAsSopsDoes: every store sops has, at the sizes
// and with the characters that broke it before (dotenv with backslashes
// and \n, over 4 KiB, over 1 MiB, YAML with comments, binary), decrypts
// to what sops's own CLI gives, with an age identity and with SSH keys.
func TestDecryptsEveryFormatAsSopsDoes(t *testing.T) {
	k := newKeys(t)
	var longEnv strings.Builder
	for i := range 200 {
		longEnv.WriteString("KEY_" + strings.Repeat("X", i%7) + string(rune('A'+i%26)) + "_" + strings.Repeat("v", 30) + "=" + strings.Repeat("value-", 5) + "\n")
	}
	tests := []struct {
		name  string
		file  string
		plain []byte
		// exact: the plaintext is byte for byte the file's (sops keeps
		// dotenv and binary as they are; it writes YAML and JSON again).
		exact bool
		args  []string
	}{
		{name: "dotenv with backslashes and \\n", file: "app.env", exact: true,
			plain: []byte("PASSWORD=a\\b\\\\c\\nd\nURL=postgres://u:p@db/x?ssl=on\nEMPTY=\n")},
		{name: "dotenv over 4 KiB", file: ".env", exact: true, plain: []byte(longEnv.String())},
		{name: "yaml with comments", file: "values.yaml",
			plain: []byte("# a comment on top\ndb:\n    # the password\n    password: hunter2 # trailing\n    port: 5432\nlist:\n    - a\n    - b\n")},
		{name: "yaml encrypted in place", file: "pod.yaml", args: []string{"--encrypted-regex", "^(value|data)$"},
			plain: []byte("pods:\n    - id: web\n      containers:\n        - name: app\n          env:\n            - name: TOKEN\n              value: s3cret\n")},
		{name: "json", file: "conf.json", plain: []byte(`{"user":"admin","password":"hunter2","n":3,"ok":true}`)},
		{name: "ini", file: "conf.ini", plain: []byte("[db]\npassword = hunter2\nuser = admin\n")},
		{name: "binary over 1 MiB", file: "blob.bin", exact: true, plain: randomBytes(t, 1<<20+17)},
		{name: "certificate as binary", file: "tls.key", exact: true, plain: []byte("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")},
	}
	identities := []struct {
		name string
		to   string
		req  Request
	}{
		{name: "age", to: k.ageRecip, req: Request{Identities: []string{k.wrongID, k.ageID}}},
		{name: "ssh-ed25519", to: k.sshEdPub, req: Request{SSHKeys: [][]byte{k.sshEd}}},
		{name: "ssh-rsa", to: k.sshRSAPub, req: Request{SSHKeys: [][]byte{k.sshRSA}}},
	}
	for _, id := range identities {
		for _, tc := range tests {
			if id.name != "age" && !strings.HasPrefix(tc.name, "dotenv with") && tc.name != "yaml with comments" {
				continue // every format once; SSH keys on two
			}
			t.Run(id.name+"/"+tc.name, func(t *testing.T) {
				enc := encrypt(t, tc.file, tc.plain, id.to, tc.args...)
				req := id.req
				req.Files = []File{{Format: formatOf(tc.file), Data: enc}}
				got := ask(t, req).Files[0]
				if got.Error != "" {
					t.Fatalf("error %s: %s", got.Kind, got.Error)
				}
				if tc.exact && !bytes.Equal(got.Plaintext, tc.plain) {
					t.Errorf("plaintext differs from the file's (%d bytes, want %d)", len(got.Plaintext), len(tc.plain))
				}
				if id.name == "age" {
					if want := sopsDecrypt(t, tc.file, enc, k.ageID); !bytes.Equal(got.Plaintext, want) {
						t.Errorf("plaintext:\n%s\nsops decrypt gives:\n%s", got.Plaintext, want)
					}
				}
			})
		}
	}
}

// formatOf is sops's format of a file name (as hostlet's sopsfile
// package gives it).
func formatOf(name string) string {
	switch filepath.Ext(name) {
	case ".yaml", ".yml":
		return "yaml"
	case ".json":
		return "json"
	case ".ini":
		return "ini"
	case ".env":
		return "dotenv"
	}
	if name == ".env" || strings.HasSuffix(name, ".env") {
		return "dotenv"
	}
	return "binary"
}

// TestValuesOfEncryptedValues: for a file of values, the answer maps each
// encrypted value, as the file holds it, to its plaintext as text (numbers
// and booleans too); a binary file has none.
func TestValuesOfEncryptedValues(t *testing.T) {
	k := newKeys(t)
	tests := []struct {
		file  string
		plain string
		args  []string
		want  []string // the plaintexts, in any order
	}{
		{file: "app.env", plain: "A=one\nB=a\\b\nEMPTY=\n", want: []string{"one", "a\\b"}},
		{file: "v.yaml", plain: "# c\nx: s3cret\nn: 42\nf: 1.5\nok: true\nl:\n    - a\nkeep: plain\n", args: []string{"--encrypted-regex", "^(x|n|f|ok|l)$"}, want: []string{"s3cret", "42", "1.5", "true", "a"}},
		{file: "c.json", plain: `{"p":"q","nested":{"r":"s"}}`, want: []string{"q", "s"}},
		{file: "c.ini", plain: "[s]\nk = v\n", want: []string{"v"}},
		{file: "b.bin", plain: "raw", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			enc := encrypt(t, tc.file, []byte(tc.plain), k.ageRecip, tc.args...)
			got := ask(t, Request{Identities: []string{k.ageID}, Files: []File{{Format: formatOf(tc.file), Data: enc}}}).Files[0]
			if got.Error != "" {
				t.Fatal(got.Error)
			}
			var plains []string
			for e, p := range got.Values {
				if !strings.HasPrefix(e, "ENC[AES256_GCM,data:") || !bytes.Contains(enc, []byte(e)) {
					t.Errorf("key %q is not a value of the file", e)
				}
				plains = append(plains, p)
			}
			slices.Sort(plains)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(plains, want) {
				t.Errorf("values %q, want %q", plains, want)
			}
		})
	}
}
