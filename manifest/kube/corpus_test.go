package kube_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/kube"
	"github.com/hostlet/hostlet/validate"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the .want files of testdata/corpus from the current output")

// The corpus: testdata/corpus/*.yaml are real Kubernetes manifests
// written by others, kept byte for byte as published (SOURCE.md names
// the origin, commit and licence of each). Each file is one source: it is
// decoded, translated and validated with corpusPolicy, and its output is
// compared with the file's .want (one line each):
//
//   - every decode error, in order;
//   - every translation error of the source (objects that give no pod);
//   - every rejection error of validation, in pod order (a pod's own
//     translation errors among them);
//   - every note of the pods, "note: " first, in pod order;
//   - "accepted <id>" for each accepted pod, in order.

const (
	// corpusDir holds the corpus.
	corpusDir = "testdata/corpus"
	// maxCorpusFile bounds a corpus file: real manifests, not stress
	// inputs.
	maxCorpusFile = 64 << 10
	// corpusTimeout bounds the handling of one file: a hang fails the test
	// rather than the whole run.
	corpusTimeout = 30 * time.Second
)

// corpusPolicy is a host that allows everything the options can allow,
// so that the output shows the translation's own verdict and the rules
// no host policy lifts.
var corpusPolicy = validate.Options{
	HostPathAllow:    []string{"/"},
	ExternalVolumes:  []string{"*"},
	ExternalNetworks: []string{"*"},
	Policy: validate.Policy{
		Privileged:   true,
		Capabilities: []string{"ALL"},
		HostNetwork:  true,
	},
}

// corpusOutcome is what one corpus file gives.
type corpusOutcome struct {
	// lines are the output compared with the .want file.
	lines []string
	// silent names the objects that gave neither a pod nor an error.
	silent []string
}

// runCorpusFile decodes, translates and validates one corpus file, the
// one file of source "corpus".
func runCorpusFile(name string, data []byte) corpusOutcome {
	var out corpusOutcome
	ms, err := manifest.Decode(data, manifest.Origin{Source: "corpus", File: name})
	for _, e := range validate.Flatten(err) {
		out.lines = append(out.lines, e.Error())
	}
	pods, errs := kube.Translate(ms)
	for _, e := range errs {
		out.lines = append(out.lines, e.Error())
	}
	res := validate.Set([]manifest.Snapshot{{Name: "corpus", Manifests: pods}}, corpusPolicy)
	for _, r := range res.Rejected {
		out.lines = append(out.lines, r.Reasons...)
	}
	for _, p := range pods {
		for _, n := range p.Notes {
			out.lines = append(out.lines, "note: "+n.Error())
		}
	}
	for _, a := range res.Accepted {
		out.lines = append(out.lines, "accepted "+a.Manifest.ID)
	}
	out.silent = silentObjects(ms, pods, errs)
	return out
}

// dataKinds are the kinds that give no pod of their own: the pods look
// them up.
var dataKinds = map[string]bool{"ConfigMap": true, "Secret": true, "PersistentVolumeClaim": true}

// silentObjects names the Kubernetes objects of ms, other than data
// objects, that gave neither a pod nor a translation error: nothing an
// author writes may vanish without a word.
func silentObjects(ms, pods []manifest.Sourced, errs []*manifest.Error) []string {
	heard := map[manifest.Origin]bool{}
	for _, p := range pods {
		heard[p.Origin] = true
	}
	for _, e := range errs {
		heard[e.Origin] = true
	}
	var silent []string
	for _, m := range ms {
		if m.Kube == nil || dataKinds[m.Kube.Kind] || heard[m.Origin] {
			continue
		}
		silent = append(silent, fmt.Sprintf("%s (document %d)", m.Kube, m.Origin.Index+1))
	}
	return silent
}

// runGuarded runs runCorpusFile, turning a panic into an error and a run
// longer than corpusTimeout into one.
func runGuarded(name string, data []byte) (corpusOutcome, error) {
	type result struct {
		out corpusOutcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("panic: %v\n%s", r, debug.Stack())}
			}
		}()
		done <- result{out: runCorpusFile(name, data)}
	}()
	select {
	case r := <-done:
		return r.out, r.err
	case <-time.After(corpusTimeout):
		return corpusOutcome{}, fmt.Errorf("not finished after %v", corpusTimeout)
	}
}

// TestCorpusOfRealManifestsGivesItsExpectedOutput runs every corpus file
// through decoding, translation and validation, and compares the output
// with its .want file (go test ./manifest/kube -run Corpus
// -update-corpus rewrites them).
func TestCorpusOfRealManifestsGivesItsExpectedOutput(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("found %d corpus files, want at least 30", len(files))
	}
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(strings.TrimSuffix(name, ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(data) > maxCorpusFile {
				t.Fatalf("%d bytes: a corpus file holds at most %d", len(data), maxCorpusFile)
			}
			out, err := runGuarded(name, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range out.silent {
				t.Errorf("%s gave neither a pod nor an error", s)
			}
			compareWant(t, strings.TrimSuffix(f, ".yaml")+".want", out.lines)
		})
	}
}

// compareWant compares the output lines with the want file, or rewrites
// it with -update-corpus.
func compareWant(t *testing.T, path string, lines []string) {
	t.Helper()
	got := strings.Join(lines, "\n")
	if len(lines) > 0 {
		got += "\n"
	}
	if *updateCorpus {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./manifest/kube -run Corpus -update-corpus writes it)", err)
	}
	if got == string(want) {
		return
	}
	wantLines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
	for i := range max(len(lines), len(wantLines)) {
		var g, w string
		if i < len(lines) {
			g = lines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("%s line %d:\n got: %s\nwant: %s", path, i+1, g, w)
		}
	}
}

// TestCorpusFilesAreNamedInSource checks that SOURCE.md names every
// corpus file, and that every .want file has its manifest.
func TestCorpusFilesAreNamedInSource(t *testing.T) {
	source, err := os.ReadFile(filepath.Join(corpusDir, "SOURCE.md"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		glob  string
		check func(t *testing.T, name string)
	}{
		{"*.yaml", func(t *testing.T, name string) {
			if !strings.Contains(string(source), "`"+name+"`") {
				t.Errorf("SOURCE.md does not name %s", name)
			}
		}},
		{"*.want", func(t *testing.T, name string) {
			if _, err := os.Stat(filepath.Join(corpusDir, strings.TrimSuffix(name, ".want")+".yaml")); err != nil {
				t.Errorf("%s has no manifest: %v", name, err)
			}
		}},
	}
	for _, tt := range tests {
		files, err := filepath.Glob(filepath.Join(corpusDir, tt.glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			tt.check(t, filepath.Base(f))
		}
	}
}
