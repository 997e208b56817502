package validate_test

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/validate"
)

var update = flag.Bool("update", false, "rewrite the corpus's want.txt (and existing accepted.txt) files from the current output")

// corpusOptions are the host settings every corpus case is checked with.
// The host policy of the corpus: /srv for host paths, and the external
// volume and network the accepted cases use.
var corpusOptions = validate.Options{HostPathAllow: []string{"/srv"}, ExternalVolumes: []string{"corp-backups"}, ExternalNetworks: []string{"corp-lan"}}

// The corpus: testdata/invalid/NN-name/ and testdata/valid/ are cases. In a
// case folder every entry but want.txt and accepted.txt is one source, in
// name order: a file a.yaml is source "a" holding that one file; a folder
// b/ is source "b" holding every file under it (sorted by path, hidden ones
// skipped), named by their path inside b/. Each file is read with
// manifest.ReadFile and decoded with manifest.Decode; then the sources go
// through validate.Set with corpusOptions.
//
// want.txt holds the expected errors, one manifest.Error string a line:
// read and decode errors in source and file order, then Set's rejections in
// order. accepted.txt, where present, lists the accepted manifests in order
// as "id origin#index".

// corpusCase is the outcome of running one case folder.
type corpusCase struct {
	errors   []string
	accepted []string
}

// runCase reads the sources of a case folder and checks them.
func runCase(t *testing.T, dir string) corpusCase {
	t.Helper()
	sources, errs := readSources(t, dir)
	res := validate.Set(sources, corpusOptions)
	var out corpusCase
	for _, e := range errs {
		out.errors = append(out.errors, e.Error())
	}
	for _, e := range validate.Flatten(res.Err()) {
		out.errors = append(out.errors, e.Error())
	}
	for _, a := range res.Accepted {
		out.accepted = append(out.accepted, fmt.Sprintf("%s %s#%d", a.Manifest.ID, a.Origin, a.Origin.Index))
	}
	return out
}

// readSources reads and decodes the sources of a case folder, returning
// them with every read and decode error.
func readSources(t *testing.T, dir string) ([]validate.Source, []*manifest.Error) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var (
		sources []validate.Source
		errs    []*manifest.Error
	)
	for _, e := range entries {
		name := e.Name()
		if name == "want.txt" || name == "accepted.txt" || strings.HasPrefix(name, ".") {
			continue
		}
		src := validate.Source{Name: strings.TrimSuffix(name, filepath.Ext(name))}
		root, files := dir, []string{name}
		if e.IsDir() {
			root = filepath.Join(dir, name)
			files = sourceFiles(t, root)
		}
		for _, rel := range files {
			origin := manifest.Origin{Source: src.Name, File: rel}
			data, err := manifest.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				errs = append(errs, &manifest.Error{Origin: origin, Detail: err.Error()})
				continue
			}
			ms, err := manifest.Decode(data, origin)
			errs = append(errs, validate.Flatten(err)...)
			src.Manifests = append(src.Manifests, ms...)
		}
		sources = append(sources, src)
	}
	return sources, errs
}

// sourceFiles lists the files under root by their slash-separated path
// inside it, sorted, hidden files and folders skipped.
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// readLines reads a want file: one entry a line, no trailing empty line.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(data), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// compareLines reports the difference between the lines a case produced
// and the ones in file, or rewrites file with -update.
func compareLines(t *testing.T, file string, got []string) {
	t.Helper()
	if *update {
		writeLines(t, file, got)
		return
	}
	want := readLines(t, file)
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("%s: output differs (run go test ./validate -run %s -update to accept it)", file, t.Name())
	for i := 0; i < max(len(got), len(want)); i++ {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("line %d:\n got: %s\nwant: %s", i+1, g, w)
		}
	}
}

func TestCorpusInvalid(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "invalid", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 45 {
		t.Fatalf("found %d cases in testdata/invalid, want at least 45", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got := runCase(t, dir)
			for _, line := range got.errors {
				if strings.Contains(line, "\n") {
					t.Errorf("error spans lines: %q", line)
				}
			}
			compareLines(t, filepath.Join(dir, "want.txt"), got.errors)
			if acc := filepath.Join(dir, "accepted.txt"); fileExists(acc) {
				compareLines(t, acc, got.accepted)
			}
		})
	}
}

func TestCorpusValid(t *testing.T) {
	dir := filepath.Join("testdata", "valid")
	got := runCase(t, dir)
	if len(got.errors) > 0 {
		t.Errorf("valid set has errors:\n%s", strings.Join(got.errors, "\n"))
	}
	compareLines(t, filepath.Join(dir, "accepted.txt"), got.accepted)
}

// TestCorpusOversizedFile is the corpus case of a 20 MiB file, made at run
// time rather than committed: it is refused with a size error, read from
// the file's size before its content.
func TestCorpusOversizedFile(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("# padding padding padding padding padding padding\n", (20<<20)/50)
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	got := runCase(t, dir)
	want := []string{fmt.Sprintf("a:a.yaml: %d bytes: larger than the size limit of 10485760 bytes", len(big))}
	if !slices.Equal(got.errors, want) {
		t.Errorf("errors:\n got %q\nwant %q", got.errors, want)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestGoldenManifestsValid checks that the manifests whose hashes are
// pinned in manifest/testdata/golden are valid, together on one host.
func TestGoldenManifestsValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "manifest", "testdata", "golden", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	src := validate.Source{Name: "golden"}
	for _, f := range files {
		data, err := manifest.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ms, err := manifest.Decode(data, manifest.Origin{Source: src.Name, File: filepath.Base(f)})
		if err != nil {
			t.Fatal(err)
		}
		src.Manifests = append(src.Manifests, ms...)
	}
	res := validate.Set([]validate.Source{src}, corpusOptions)
	if err := res.Err(); err != nil {
		t.Errorf("golden manifests are invalid:\n%v", err)
	}
	if len(res.Accepted) != 14 {
		t.Errorf("accepted %d manifests, want 14", len(res.Accepted))
	}
}
