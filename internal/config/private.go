package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// privateFile is a file holding a credential and the key that names it.
type privateFile struct {
	key, path string
}

// privateFiles are the config's files that hold credentials: tokenFile,
// every source's auth.passwordFile and auth.sshKeyFile, every notify
// target's urlFile and secretFile, the secrets' key files.
func (c *Config) privateFiles() []privateFile {
	var files []privateFile
	add := func(key, path string) {
		if path != "" {
			files = append(files, privateFile{key: key, path: path})
		}
	}
	add("tokenFile", c.TokenFile)
	for i, s := range c.Sources {
		add(fmt.Sprintf("sources[%d].auth.passwordFile", i), s.Auth.PasswordFile)
		add(fmt.Sprintf("sources[%d].auth.sshKeyFile", i), s.Auth.SSHKeyFile)
	}
	for i, n := range c.Notify {
		add(fmt.Sprintf("notify[%d].urlFile", i), n.URLFile)
		add(fmt.Sprintf("notify[%d].secretFile", i), n.SecretFile)
	}
	// Held to more again at start (secrets.LoadKeys: mode 0600, hostlet's
	// own); here the folders they lie in are checked too.
	add("secrets.ageKeyFile", c.Secrets.AgeKeyFile)
	add("secrets.sshKeyFile", c.Secrets.SSHKeyFile)
	return files
}

// CheckPrivateFiles refuses credential files that other users of the
// host may read or write, or replace: the config's (privateFiles) and
// keys, the key files hostlet keeps under stateDir (named by their path).
// A file is refused when any of its mode's "other" bits is set, when its
// group may write it, or when a folder it lies in (on the path as written
// or on the path its symlinks lead to) is writable by every user without
// the sticky bit, so that anyone may put another file in its place. Group
// read is the host's choice (a group may share the token with `hostlet
// hold`'s users), and so is a folder its group may write. A file that does
// not exist is left to its reader to report; hostlet run checks before
// anything reads one. Every offending file is named, with the chmod that
// fixes it.
func (c *Config) CheckPrivateFiles(keys ...string) error {
	files := c.privateFiles()
	for _, k := range keys {
		files = append(files, privateFile{path: k})
	}
	var bad []string
	for _, f := range files {
		name := f.path
		if f.key != "" {
			name = f.key + " " + f.path
		}
		bad = append(bad, privateFileProblems(name, f.path)...)
	}
	if len(bad) > 0 {
		return fmt.Errorf("refusing to start: %s", strings.Join(bad, "; "))
	}
	return nil
}

// privateFileProblems says what makes the credential file at path, shown
// as name, open to other users: nothing when it is private or does not
// exist.
func privateFileProblems(name, path string) []string {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	var bad []string
	if why := modeProblem(fi.Mode().Perm(), path); why != "" {
		bad = append(bad, name+" "+why)
	}
	folders, err := enclosingFolders(path)
	if err != nil {
		return append(bad, fmt.Sprintf("%s: %v", name, err))
	}
	for _, d := range folders {
		di, err := os.Stat(d)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: folder %v", name, err))
			continue
		}
		if perm := di.Mode().Perm(); perm&0o002 != 0 && di.Mode()&fs.ModeSticky == 0 {
			bad = append(bad, fmt.Sprintf("%s lies in folder %s, which has mode %04o: every user can put another file in its place (chmod o-w %s, or +t)", name, d, perm, d))
		}
	}
	return bad
}

// modeProblem says who besides the owner and the group's readers can get
// at a file of mode perm, with the chmod that fixes it; "" when nobody.
func modeProblem(perm fs.FileMode, path string) string {
	var who, fix []string
	if perm&0o007 != 0 {
		who = append(who, "other users can "+access(perm)+" it")
	}
	if perm&0o020 != 0 {
		who = append(who, "its group can write it")
		fix = append(fix, "g-w")
	}
	if perm&0o007 != 0 {
		fix = append(fix, "o-rwx")
	}
	if len(who) == 0 {
		return ""
	}
	return fmt.Sprintf("has mode %04o: %s (chmod %s %s)", perm, strings.Join(who, " and "), strings.Join(fix, ","), path)
}

// enclosingFolders are the folders path lies in, from its own up to "/",
// both on the path as written (made absolute) and on the path its
// symlinks lead to, each once: whoever may write one of them may rename
// what is below it and put something else there.
func enclosingFolders(path string) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("absolute path of %s: %w", path, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolving the links of %s: %w", path, err)
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range []string{abs, real} {
		for d := filepath.Dir(p); !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out, nil
}

// access says what perm's "other" bits allow.
func access(perm fs.FileMode) string {
	var can []string
	if perm&0o004 != 0 {
		can = append(can, "read")
	}
	if perm&0o002 != 0 {
		can = append(can, "write")
	}
	if perm&0o001 != 0 && len(can) == 0 {
		can = append(can, "execute")
	}
	return strings.Join(can, " and ")
}
