package secrets_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit/sopstest"
	"github.com/hostlet/hostlet/manifest/sopsfile"
	"github.com/hostlet/hostlet/secrets"
)

// sealed is a file encrypted by the sops CLI, recognised as sopsfile
// does, ready for Decrypt.
func sealed(t *testing.T, name string, plain []byte, to ...string) secrets.File {
	t.Helper()
	data := sopstest.Encrypt(t, name, plain, to)
	info, ok, err := sopsfile.Detect(name, data)
	if !ok || err != nil {
		t.Fatalf("%s: not recognised: %v", name, err)
	}
	return secrets.File{Name: "apps:" + name, Format: info.Format, Data: data}
}

func loadKeys(t *testing.T, k sopstest.Key) secrets.Keys {
	t.Helper()
	keys, err := secrets.LoadKeys(k.File, "")
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestDecryptsThroughTheHelper: files of every format, in one run of the
// helper, come back as their plaintext; a file for another host is that
// file's error only, naming it; a file seen before is not decrypted again.
func TestDecryptsThroughTheHelper(t *testing.T) {
	helper := sopstest.Helper(t)
	host, other := sopstest.NewKey(t), sopstest.NewKey(t)
	files := []secrets.File{
		sealed(t, ".env", []byte("PASSWORD=a\\b\nUSER=x\n"), host.Recipient),
		sealed(t, "conf/app.yaml", []byte("password: hunter2\n"), host.Recipient, other.Recipient),
		sealed(t, "tls.key", []byte("-----BEGIN KEY-----\n"), host.Recipient),
		sealed(t, "other.env", []byte("TOKEN=x\n"), other.Recipient),
		sealed(t, "empty.bin", []byte{}, host.Recipient),
	}
	d := secrets.NewDecrypter(helper, loadKeys(t, host))
	plain, errs := d.Decrypt(context.Background(), files)
	want := []string{"PASSWORD=a\\b\nUSER=x\n", "password: hunter2\n", "-----BEGIN KEY-----\n", "", ""}
	for i, f := range files {
		if i == 3 {
			var e *secrets.Error
			if !errors.As(errs[i], &e) || e.Kind != secrets.KindNoKey || !strings.HasPrefix(e.Error(), "cannot decrypt apps:other.env: no matching age identity") {
				t.Errorf("%s: %v", f.Name, errs[i])
			}
			continue
		}
		if errs[i] != nil || string(plain[i].Data) != want[i] || plain[i].Data == nil {
			t.Errorf("%s: %q %v, want %q", f.Name, plain[i].Data, errs[i], want[i])
		}
	}

	// Cached: without its helper, the decrypter answers what it decrypted
	// before, the error too (under the name it is asked by now).
	cachedOnly := secrets.NewDecrypter("/nonexistent/hostlet-sops", loadKeys(t, host))
	if _, errs := cachedOnly.Decrypt(context.Background(), files[:1]); errs[0] == nil || !strings.Contains(errs[0].Error(), "/nonexistent/hostlet-sops") {
		t.Fatalf("a missing helper: %v", errs[0])
	}
	d2 := secrets.NewDecrypter(helper, loadKeys(t, host))
	d2.Decrypt(context.Background(), files)
	renamed := files[3]
	renamed.Name = "apps:renamed.env"
	p, errs := d2.Decrypt(context.Background(), []secrets.File{files[0], renamed})
	if !bytes.Equal(p[0].Data, plain[0].Data) || len(p[0].Values) != 2 || errs[1] == nil || !strings.Contains(errs[1].Error(), "apps:renamed.env") {
		t.Errorf("again: %q %v %v", p[0].Data, p[0].Values, errs)
	}
}

// TestKeysAreNeverShown: a Keys value prints and logs as [keys].
func TestKeysAreNeverShown(t *testing.T) {
	k := sopstest.NewKey(t)
	keys := loadKeys(t, k)
	for _, s := range []string{keys.String(), keys.GoString(), keys.LogValue().String()} {
		if s != "[keys]" {
			t.Errorf("shown as %q", s)
		}
	}
}

// TestAFileThatFailsTheHelperFailsOnlyItself: a batch the helper dies on
// is tried again one file at a time, so the good files are decrypted and
// only the bad one fails; that failure is then answered from the cache
// for a while, not run again at once.
func TestAFileThatFailsTheHelperFailsOnlyItself(t *testing.T) {
	real := sopstest.Helper(t)
	dir := t.TempDir()
	wrapper := filepath.Join(dir, "hostlet-sops")
	runs := filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho run >> " + runs + "\nin=$(cat)\ncase \"$in\" in *'\"format\":\"boom\"'*) echo boom >&2; exit 3;; esac\nprintf '%s' \"$in\" | exec " + real + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	host := sopstest.NewKey(t)
	good := sealed(t, ".env", []byte("A=b\n"), host.Recipient)
	bad := secrets.File{Name: "apps:bad", Format: "boom", Data: []byte("x")}
	d := secrets.NewDecrypter(wrapper, loadKeys(t, host))
	plain, errs := d.Decrypt(context.Background(), []secrets.File{good, bad})
	var e *secrets.Error
	if errs[0] != nil || string(plain[0].Data) != "A=b\n" {
		t.Errorf("the good file: %q %v", plain[0].Data, errs[0])
	}
	if !errors.As(errs[1], &e) || e.Kind != secrets.KindHelper || !strings.Contains(e.Error(), "cannot decrypt apps:bad: hostlet-sops: exit status 3: boom") {
		t.Errorf("the bad file: %v", errs[1])
	}
	before := countLines(t, runs)
	if _, errs := d.Decrypt(context.Background(), []secrets.File{good, bad}); errs[1] == nil {
		t.Error("the bad file decrypted the second time")
	}
	if after := countLines(t, runs); after != before {
		t.Errorf("the helper ran %d more times for files it answered before", after-before)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
