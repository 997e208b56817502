package compose_test

// An included file is held to the main file's rules: it reads no host
// file (bundleFiles' view of links, preScan's refusal of
// include.project_directory / include.env_file, vetExtended on included
// files), shows no value or memory file in an error, and takes its paths
// from its own folder. Each test states the promise it checks.

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

const includeSecret = "hunter2pw"

// hostSecrets makes a host folder (outside any project) holding
// secret.env and .env, both KEY=VALUE files with includeSecret, and
// bad.env, whose unterminated quote makes compose-go's dotenv parser
// quote its line back.
func hostSecrets(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{
		"secret.env": "SECRET=" + includeSecret + "\n",
		".env":       "SECRET=" + includeSecret + "\n",
		"bad.env":    "SECRET=\"" + includeSecret + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// leaked are the places where any of words shows in the pods (as
// hostlet hands them on) or in the errors.
func leaked(t *testing.T, pods []manifest.Sourced, errs []string, words ...string) []string {
	t.Helper()
	var out []string
	data, err := json.Marshal(pods)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		if strings.Contains(string(data), w) {
			out = append(out, "a pod holds "+w)
		}
		for _, e := range errs {
			if strings.Contains(e, w) {
				out = append(out, "an error shows "+w+": "+e)
			}
		}
	}
	return out
}

// secretInner is an included file that hands SECRET (if some env file
// set it) to its container.
const secretInner = "services:\n  leak:\n    image: busybox\n    environment: {STOLEN: '${SECRET:-none}'}\n"

// TestNestedIncludeEnvFileAndProjectDirectoryRefused (preScan, docs):
// include.env_file and include.project_directory are refused, so
// compose-go never reads a host file for an include, in an included file
// too. The refusal was in preScan, run on the main and override files
// only; an included file (vetExtended/rebaseExtends) could carry them in
// its own include. compose-go (loader/include.go ApplyInclude) then reads an
// absolute env_file, a relative one from the helper's working folder, or
// PROJECT_DIRECTORY/.env, with os.Stat and os.ReadFile: any host file in
// KEY=VALUE (or KEY: value) form lands in the interpolation environment
// and from there in the attacker's container (environment, labels,
// image); a missing one is an existence oracle ("couldn't find env file:
// /path"), a file with an unterminated quote has its line quoted back in
// the error, /dev/zero exhausts memory, a FIFO hangs the helper.
func TestNestedIncludeEnvFileAndProjectDirectoryRefused(t *testing.T) {
	dir := hostSecrets(t)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relSecret, err := filepath.Rel(cwd, filepath.Join(dir, "secret.env"))
	if err != nil {
		t.Fatal(err)
	}
	main := "include: [base.yaml]\nservices:\n  web: {image: busybox}\n"
	tests := []struct{ name, base string }{
		{"env_file absolute", "include: [{path: inner.yaml, env_file: " + dir + "/secret.env}]\n"},
		{"env_file relative, from the helper's working folder", "include: [{path: inner.yaml, env_file: '" + relSecret + "'}]\n"},
		{"env_file quoted back", "include: [{path: inner.yaml, env_file: " + dir + "/bad.env}]\n"},
		{"env_file oracle", "include: [{path: inner.yaml, env_file: " + dir + "/missing.env}]\n"},
		{"project_directory absolute", "include: [{path: inner.yaml, project_directory: " + dir + "}]\n"},
	}
	for _, tt := range tests {
		for _, where := range []string{"base.yaml", "sub/base.yaml"} {
			t.Run(tt.name+"/"+where, func(t *testing.T) {
				files := mapFiles{
					"compose.yaml":                           strings.Replace(main, "base.yaml", where, 1),
					where:                                    tt.base,
					path.Join(path.Dir(where), "inner.yaml"): secretInner,
				}
				pods, errs := load(t, files, compose.Options{})
				for _, l := range leaked(t, pods, errs, includeSecret, dir) {
					t.Errorf("%s: %s", where, l)
				}
				if !strings.Contains(strings.Join(errs, "\n"), "not supported") {
					t.Errorf("%s: errors %q, want the include's env_file/project_directory refused as in the main file", where, errs)
				}
			})
		}
	}
}

// TestIncludeEnvFileRefusedInEverySpelling (preScan): the main file's
// include.env_file and include.project_directory are refused, however
// written. preScan looked for the exact keys in the YAML nodes of each
// list entry; compose-go decodes include entries with mapstructure, which
// matches field names case-insensitively (include entries are deleted
// before schema validation, so no schema catches ENV_FILE), and expands
// aliases and merge keys preScan did not follow. Every form below makes
// compose-go read a host file.
func TestIncludeEnvFileRefusedInEverySpelling(t *testing.T) {
	dir := hostSecrets(t)
	env := dir + "/secret.env"
	tests := []struct{ name, main string }{
		{"ENV_FILE", "include: [{path: inner.yaml, ENV_FILE: " + env + "}]\n"},
		{"Env_File", "include: [{path: inner.yaml, Env_File: " + env + "}]\n"},
		{"PROJECT_DIRECTORY", "include: [{path: inner.yaml, PROJECT_DIRECTORY: " + dir + "}]\n"},
		{"alias entry", "x-i: &i {path: inner.yaml, env_file: " + env + "}\ninclude: [*i]\n"},
		{"alias list", "x-i: &i [{path: inner.yaml, env_file: " + env + "}]\ninclude: *i\n"},
		{"merge key in entry", "x-i: &i {env_file: " + env + "}\ninclude: [{<<: *i, path: inner.yaml}]\n"},
		{"merge key at the top", "x-i: &i {include: [{path: inner.yaml, env_file: " + env + "}]}\n<<: *i\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := mapFiles{
				"compose.yaml": tt.main + "services:\n  web: {image: busybox}\n",
				"inner.yaml":   secretInner,
			}
			pods, errs := load(t, files, compose.Options{})
			for _, l := range leaked(t, pods, errs, includeSecret) {
				t.Errorf("%s", l)
			}
			if !strings.Contains(strings.Join(errs, "\n"), "not supported") {
				t.Errorf("errors %q, want the include refused", errs)
			}
		})
	}
}

// TestIncludedDotEnvIsVettedOrRefused (vetExtended): every file
// compose-go reads is vetted (develop refused: compose-go runs
// utils.ResolveSymbolicLink on its paths, an Lstat/EvalSymlinks oracle on
// the host). Load links the .env beside each referenced file unvetted, and
// a later include or extends.file of that .env got the cached link
// (b.local) without vetExtended. compose-go's dotenv parser takes "key:
// value" lines, so a one-line YAML flow mapping is both a valid .env and a
// valid Compose file.
func TestIncludedDotEnvIsVettedOrRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target-of-a-host-link")
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	dotenv := "services: {probe: {image: busybox, develop: {watch: [{path: '" + dir + "/link/x', action: sync, target: /app}]}}}\n"
	for name, main := range map[string]string{
		"include": "include: [db/compose.yaml, db/.env]\nservices:\n  web: {image: busybox}\n",
		"extends": "include: [db/compose.yaml]\nservices:\n  web: {image: busybox, extends: {file: db/.env, service: probe}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := mapFiles{"compose.yaml": main, "db/compose.yaml": "services:\n  db: {image: busybox}\n", "db/.env": dotenv}
			pods, errs := load(t, files, compose.Options{})
			for _, l := range leaked(t, pods, errs, target) {
				t.Errorf("%s", l)
			}
			// Refused as a .env (never handed out as a Compose file), or
			// vetted as one.
			if text := strings.Join(errs, "\n"); !strings.Contains(text, "develop: not supported") && !strings.Contains(text, "db/.env: a folder's .env is not a Compose file") {
				t.Errorf("errors %q, want db/.env vetted as a Compose file (develop refused)", errs)
			}
		})
	}
}

// TestIncludedFolderEnvValuesNeverInErrors (load, scrub.go): values of the
// interpolation environment never show in errors, and a .env that does
// not parse is named by line, not quoted, an included folder's .env too.
// That held for the project's .env and compose.env (given to newScrubber,
// parsed by dotenvError); an included folder's .env is parsed by
// compose-go and its values were not scrubbed.
func TestIncludedFolderEnvValuesNeverInErrors(t *testing.T) {
	tests := []struct{ name, svc, env string }{
		{"ports", `ports: ["${SECRET}:80"]`, "SECRET=" + includeSecret + "\n"},
		{"restart", `restart: "${SECRET}"`, "SECRET=" + includeSecret + "\n"},
		{"expose", `expose: ["${SECRET}"]`, "SECRET=" + includeSecret + "\n"},
		{"environment list entry", `environment: ["${SECRET}"]`, "SECRET=" + includeSecret + "\n"},
		{"env_file path", `env_file: ["${SECRET}"]`, "SECRET=" + includeSecret + "\n"},
		{".env does not parse", `environment: {A: "1"}`, "SECRET=\"" + includeSecret + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := mapFiles{
				"compose.yaml":    "include: [db/compose.yaml]\nservices:\n  web: {image: busybox}\n",
				"db/compose.yaml": "services:\n  db:\n    image: busybox\n    " + tt.svc + "\n",
				"db/.env":         tt.env,
			}
			_, errs := load(t, files, compose.Options{})
			for _, e := range errs {
				if strings.Contains(e, "hunter2") {
					t.Errorf("a value of db/.env is in an error: %s", e)
				}
			}
		})
	}
}

// TestIncludedExtendsPathsResolvedOnce (include.go doc, Dir): an included
// file's relative paths, and those of a file it extends, are from its own
// folder. In an included file of a sub-folder, an extended file's paths
// were resolved twice: by loadExtendsBase against Dir (db) and again by
// the include's ResolveRelativePaths against the same relative folder,
// giving db/db/... (compose-go expects absolute folders, for which the
// second pass is a no-op). A project that had db/db/conf got it mounted
// instead of db/conf, silently.
func TestIncludedExtendsPathsResolvedOnce(t *testing.T) {
	files := mapFiles{
		"compose.yaml":    "include: [db/compose.yaml]\nservices:\n  web: {image: busybox}\n",
		"db/compose.yaml": "services:\n  db: {extends: {file: base.yaml, service: b}}\n",
		"db/base.yaml":    "services:\n  b: {image: busybox, volumes: ['./conf:/conf'], env_file: [x.env]}\n",
		"db/conf":         "right\n",
		"db/db/conf":      "wrong\n",
		"db/x.env":        "A=1\n",
	}
	pods, errs := load(t, files, compose.Options{})
	if len(errs) > 0 {
		t.Errorf("errors %q, want none (db/x.env is beside db/base.yaml)", errs)
	}
	for _, p := range pods {
		if p.Manifest.ID != "shop-db" {
			continue
		}
		if got := filesMounts(t, p.Manifest)["/conf"]; got.source != "db/conf" {
			t.Errorf("db's /conf is %q, want db/conf (beside db/base.yaml)", got.source)
		}
	}
}

// TestIncludedHomePathByInterpolationRefused (vetServices): a path in a
// home folder is refused in an included file as in the main file, made by
// interpolation too. vetServices reads the text before interpolation:
// ${UNSET:-~} passes it, compose-go interpolates it to ~ and expands it
// from $HOME (paths.ExpandUser) before hostlet sees it.
func TestIncludedHomePathByInterpolationRefused(t *testing.T) {
	home := t.TempDir()
	// The helper runs without an environment (project.Renderer: no
	// variable of hostlet's): no HOME, so compose-go cannot expand ~.
	// Here too, and the promise is checked as it holds in the helper.
	t.Setenv("HOME", "")
	files := mapFiles{
		"compose.yaml":    "include: [db/compose.yaml]\nservices:\n  web: {image: busybox}\n",
		"db/compose.yaml": "services:\n  db: {image: busybox, volumes: ['${UNSET:-~}/.ssh:/root/.ssh'], env_file: ['${UNSET:-~}/.env']}\n",
	}
	pods, errs := load(t, files, compose.Options{})
	for _, l := range leaked(t, pods, errs, home) {
		t.Errorf("%s", l)
	}
	if !strings.Contains(strings.Join(errs, "\n"), "a path in a home folder") {
		t.Errorf("errors %q, want ~ refused as in the main file", errs)
	}
}

// TestLoadWithoutWritableTempFolder (bundleFiles): no content is written
// to the disk, and errors show no helper internals. The view of links
// needs a writable temp folder; without one (disk full, read-only /tmp)
// an extends.file, which needs only memory files, must still load, and no
// error may name the host's temp folder.
func TestLoadWithoutWritableTempFolder(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "no-such-tmp")
	t.Setenv("TMPDIR", tmp)
	for name, main := range map[string]string{
		"include": "include: [a.yaml]\nservices:\n  web: {image: busybox}\n",
		"extends": "services:\n  web: {image: busybox, extends: {file: a.yaml, service: a}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			files := mapFiles{"compose.yaml": main, "a.yaml": "services: {a: {image: busybox}}\n"}
			pods, errs := load(t, files, compose.Options{})
			for _, l := range leaked(t, pods, errs, tmp) {
				t.Errorf("%s", l)
			}
			if name == "extends" && len(errs) > 0 {
				t.Errorf("extends.file without a writable temp folder: errors %q, want it loaded from memory as before", errs)
			}
		})
	}
}

// TestFileAndFolderOfOneNameShowNoMemoryFile (include_test "memory file
// name hidden"): no error shows a memory file's path. A bundle with a file
// and a folder of one name (only a crafted bundle has them) makes
// os.Symlink fail, and its LinkError names the link's target,
// /proc/self/fd/N.
func TestFileAndFolderOfOneNameShowNoMemoryFile(t *testing.T) {
	files := mapFiles{
		"compose.yaml": "include: [a/b.yaml, a]\nservices:\n  web: {image: busybox}\n",
		"a":            "services: {a: {image: busybox}}\n",
		"a/b.yaml":     "services: {b: {image: busybox}}\n",
	}
	_, errs := load(t, files, compose.Options{})
	for _, e := range errs {
		if strings.Contains(e, "/proc/self/fd") || strings.Contains(e, "hostlet-compose-") {
			t.Errorf("an error shows a memory file: %s", e)
		}
	}
}
