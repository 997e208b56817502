package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostletRefusesCredentialFilesOthersCanRead: a token, password, SSH
// key, notify file or stateDir key with any "other" permission bit stops
// hostlet run, each named with its key and the chmod that fixes it;
// owner- and group-only modes and missing files pass.
func TestHostletRefusesCredentialFilesOthersCanRead(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	c := &Config{
		TokenFile: file("token", 0o644),
		Sources: []Source{
			{Name: "a", Auth: Auth{PasswordFile: file("password", 0o640), SSHKeyFile: file("id_ed25519", 0o602)}},
			{Name: "b", Auth: Auth{SSHKeyFile: filepath.Join(dir, "missing")}},
		},
		Notify: []Notify{{URLFile: file("url", 0o600), SecretFile: file("hmac", 0o604)}},
	}
	stateKey := file("state.key", 0o666)
	err := c.CheckPrivateFiles(stateKey, file("env-hash.key", 0o600), filepath.Join(dir, "not-made-yet.key"))
	if err == nil {
		t.Fatal("no error, want the token, the SSH key, the notify secret and the state key refused")
	}
	for _, want := range []string{
		"tokenFile " + c.TokenFile + " has mode 0644: other users can read it (chmod o-rwx " + c.TokenFile + ")",
		"sources[0].auth.sshKeyFile " + c.Sources[0].Auth.SSHKeyFile + " has mode 0602: other users can write it",
		"notify[0].secretFile " + c.Notify[0].SecretFile + " has mode 0604: other users can read it",
		stateKey + " has mode 0666: other users can read and write it",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	for _, fine := range []string{"password", "url", "env-hash.key", "missing", "not-made-yet"} {
		if strings.Contains(err.Error(), fine) {
			t.Errorf("error names %s, whose mode is fine or which does not exist:\n%v", fine, err)
		}
	}

	for _, p := range []string{c.TokenFile, c.Sources[0].Auth.SSHKeyFile, c.Notify[0].SecretFile, stateKey} {
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CheckPrivateFiles(stateKey); err != nil {
		t.Errorf("after chmod o-rwx: %v", err)
	}
}

// TestHostletRefusesCredentialFilesOthersCanReplace: a credential file its
// group may write, or one in a folder (its own or one above it, on the
// path as written or where its links lead) that every user may write
// without the sticky bit, is refused with the chmod that fixes it; group
// read, a sticky world-writable folder such as /tmp and a folder only its
// group may write are fine.
func TestHostletRefusesCredentialFilesOthersCanReplace(t *testing.T) {
	type layout struct {
		file    string      // the credential, below the case's folder
		mode    os.FileMode // its mode
		folders map[string]os.FileMode
		link    string // when set, the path checked: a link to file
	}
	for _, tc := range []struct {
		name string
		layout
		want string // "" when the file must pass
	}{
		{"owner only", layout{file: "token", mode: 0o600}, ""},
		{"group may read", layout{file: "token", mode: 0o640}, ""},
		{"group may write", layout{file: "token", mode: 0o620}, "has mode 0620: its group can write it (chmod g-w "},
		{"group may read and write", layout{file: "token", mode: 0o660}, "has mode 0660: its group can write it (chmod g-w "},
		{"others may read, group may write", layout{file: "token", mode: 0o664},
			"has mode 0664: other users can read it and its group can write it (chmod g-w,o-rwx "},
		{"in a folder every user may write", layout{file: "open/token", mode: 0o600, folders: map[string]os.FileMode{"open": 0o777}},
			"lies in folder DIR/open, which has mode 0777: every user can put another file in its place (chmod o-w DIR/open, or +t)"},
		{"below a folder every user may write", layout{file: "open/keys/token", mode: 0o600, folders: map[string]os.FileMode{"open": 0o757, "open/keys": 0o700}},
			"lies in folder DIR/open, which has mode 0757"},
		{"in a sticky folder every user may write", layout{file: "tmp/token", mode: 0o600, folders: map[string]os.FileMode{"tmp": 0o777 | os.ModeSticky}}, ""},
		{"in a folder its group may write", layout{file: "shared/token", mode: 0o640, folders: map[string]os.FileMode{"shared": 0o775}}, ""},
		{"a link to a file in a folder every user may write", layout{file: "open/token", mode: 0o600, folders: map[string]os.FileMode{"open": 0o777}, link: "token-link"},
			"lies in folder DIR/open, which has mode 0777"},
		{"a link to a private file", layout{file: "keys/token", mode: 0o600, folders: map[string]os.FileMode{"keys": 0o700}, link: "token-link"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"open", "open/keys", "tmp", "shared", "keys"} {
				if mode, ok := tc.folders[f]; ok {
					p := filepath.Join(dir, f)
					if err := os.Mkdir(p, 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.Chmod(p, mode); err != nil { // past the umask
						t.Fatal(err)
					}
				}
			}
			file := filepath.Join(dir, tc.file)
			if err := os.WriteFile(file, []byte("secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(file, tc.mode); err != nil {
				t.Fatal(err)
			}
			checked := file
			if tc.link != "" {
				checked = filepath.Join(dir, tc.link)
				if err := os.Symlink(file, checked); err != nil {
					t.Fatal(err)
				}
			}
			c := &Config{TokenFile: checked}
			err := c.CheckPrivateFiles()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want an error containing %q", tc.want)
			}
			want := "tokenFile " + checked + " " + strings.ReplaceAll(tc.want, "DIR", dir)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q:\n%v", want, err)
			}
		})
	}
}
