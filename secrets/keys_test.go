package secrets

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFilesMustBePrivate: a key file others may read, or that is not
// a file, or that is missing, is refused naming the config key and the
// file.
func TestKeyFilesMustBePrivate(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("AGE-SECRET-KEY-1X\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name string
		path string
		want string
		is   error
	}{
		{name: "0600", path: write("ok.key", 0o600)},
		{name: "0400", path: write("ro.key", 0o400)},
		{name: "group may read", path: write("g.key", 0o640), want: "has mode 0640", is: ErrKeyFileOpen},
		{name: "anyone may read", path: write("o.key", 0o604), want: "chmod 600", is: ErrKeyFileOpen},
		{name: "missing", path: filepath.Join(dir, "none.key"), want: "no such file"},
		{name: "a folder", path: dir, want: "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadKeys(tc.path, "")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "secrets.ageKeyFile "+tc.path+": ") {
				t.Errorf("error %v, want secrets.ageKeyFile %s: ...%s", err, tc.path, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if _, err := LoadKeys("", tc.path); err == nil || !strings.HasPrefix(err.Error(), "secrets.sshKeyFile ") {
				t.Errorf("as the SSH key: %v", err)
			}
		})
	}
}

// TestKeyFileOfAnotherUserIsRefused: root's key file is not hostlet's
// when hostlet runs as another user (checked through the owner test on a
// file chowned away: the test needs root, as make test runs).
func TestKeyFileOfAnotherUserIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if err := CheckKeyFile(p); err == nil || !strings.Contains(err.Error(), "is owned by uid 65534, hostlet runs as uid 0") {
		t.Errorf("error %v", err)
	}
}
