package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	"github.com/hostlet/hostlet/internal/testkit/sopstest"
)

// TestValidateChecksSecretsWithoutAndWithKeys: without a key, validate
// names the host whose recipients cannot open a file its set uses, and
// --require-encrypted names a file left in plain text (a whole .env, and
// one an encrypted_regex left readable); with --secrets-key it decrypts,
// and a file the key does not open rejects its pod by name. No output
// holds a value.
func TestValidateChecksSecretsWithoutAndWithKeys(t *testing.T) {
	image := dockertest.TestImage(t)
	host, other := sopstest.NewKey(t), sopstest.NewKey(t)
	secret, partial := leakSecret(t, "val-"), leakSecret(t, "partial-")
	dir := t.TempDir()
	pod := func(id string) string {
		return fmt.Sprintf("version: v1beta1\nid: %s\ncontainers:\n  - name: app\n    image: %s\n    env:\n      - {name: TOKEN, value: %s}\n", id, image, secret)
	}
	writeFile(t, dir, "src/mine.yaml", string(sopstest.Encrypt(t, "mine.yaml", []byte(pod("mine")), []string{host.Recipient}, "--encrypted-regex", "^value$")))
	writeFile(t, dir, "src/theirs.yaml", string(sopstest.Encrypt(t, "theirs.yaml", []byte(pod("theirs")), []string{other.Recipient}, "--encrypted-regex", "^value$")))
	writeFile(t, dir, "src/shop/compose.yaml", fmt.Sprintf("services:\n  web:\n    image: %s\n    env_file: [app.env, extra.env]\n", image))
	writeFile(t, dir, "src/shop/app.env", "PASSWORD="+secret+"\n")
	writeFile(t, dir, "src/shop/extra.env", string(sopstest.Encrypt(t, "extra.env", []byte("A="+secret+"\nB="+partial+"\n"), []string{host.Recipient}, "--encrypted-regex", "^A$")))
	cfg := writeFile(t, dir, "hostlet.yaml", fmt.Sprintf("hostname: h1\nstateDir: %s\ncompose: {helper: %s}\nsecrets: {recipients: [%s], helper: %s}\nsources:\n  - {name: local, type: file, path: %s}\n",
		filepath.Join(dir, "state"), composetest.Helper(t), host.Recipient, sopstest.Helper(t), filepath.Join(dir, "src")))

	src := func(rel string) string { return "local:" + filepath.Join(dir, "src", rel) }
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "recipients", args: []string{"validate", "--config", cfg},
			want: []string{"secret: host h1 cannot decrypt " + src("theirs.yaml") + ": it is encrypted for " + other.Recipient}},
		{name: "require-encrypted", args: []string{"validate", "--config", cfg, "--require-encrypted", "*.env"},
			want: []string{src("shop/app.env") + ": --require-encrypted *.env: not encrypted with SOPS", src("shop/extra.env") + ": --require-encrypted *.env: encrypted in part: B in plain text"}},
		{name: "secrets-key", args: []string{"validate", "--config", cfg, "--secrets-key", host.File},
			want: []string{"secret: cannot decrypt " + src("theirs.yaml") + ": no matching age identity"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			out := r.stdout + r.stderr
			if r.code != 1 {
				t.Errorf("exit %d, want 1:\n%s", r.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "cannot decrypt "+src("mine.yaml")) {
				t.Errorf("the host's own file refused:\n%s", out)
			}
			for _, v := range []string{secret, partial} {
				if strings.Contains(out, v) {
					t.Errorf("a value is in the output:\n%s", out)
				}
			}
		})
	}
}
