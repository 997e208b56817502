package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
)

// hostileFiles are files of just under manifest.MaxSize (10 MiB) a
// committer can write, each of a shape that once made the decoder take
// many times its size: many tiny manifests (issue 30, finding 5: 3 MB took
// 260 MiB), one huge list, deep nesting, many documents, long strings (in
// one YAML document, in documents under manifest.MaxYAMLDocument, of
// characters JSON escapes, in JSON), structure just under
// manifest.MaxFileMarks, and an alias bomb. Each is made when its test
// runs, so that the test process stays small (a child's peak RSS counts
// its parent's at the fork).
func hostileFiles() map[string]func() string {
	const size = manifest.MaxSize - 4096
	pod := "version: v1beta1\nid: %s\ncontainers:\n- name: app\n  image: nginx\n  args: ["
	fill := func(prefix, unit, suffix string) string {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	// padded adds documents of one long string of unit (each under
	// manifest.MaxYAMLDocument) to head, up to the size.
	padded := func(head, unit string) string {
		var b strings.Builder
		b.WriteString(head)
		for i := 0; size-b.Len() > 1024; i++ {
			h := fmt.Sprintf("---\nversion: v1beta1\nid: p%d\nlabels:\n  a: \"", i)
			room := min(manifest.MaxYAMLDocument-1024, size-b.Len()) - len(h) - 2
			b.WriteString(h + strings.Repeat(unit, room/len(unit)) + "\"\n")
		}
		return b.String()
	}
	marks := manifest.MaxFileMarks - 100
	keys := func() string {
		var b strings.Builder
		b.WriteString("version: v1beta1\nid: a\nlabels:\n")
		for i := range marks {
			fmt.Fprintf(&b, "  k%d: v\n", i)
		}
		return b.String()
	}
	listDoc := func(i, items, itemLen int) string {
		return "---\n" + fmt.Sprintf(pod, fmt.Sprint("p", i)) + strings.Repeat(`"`+strings.Repeat("x", itemLen)+`",`, items) + "\"x\"]\n"
	}
	longItems := func() string {
		// marks/2 strings in all (a ',' each), in documents of 4 MiB.
		itemLen := size/(marks/2) - 3
		perDoc := (manifest.MaxYAMLDocument - 1024) / (itemLen + 3)
		var b strings.Builder
		for i, left := 0, marks/2; left > 0; i++ {
			b.WriteString(listDoc(i, min(perDoc, left), itemLen))
			left -= perDoc
		}
		return b.String()
	}
	bomb := []string{"version: v1beta1", "id: a", "x:", "  a0: &a0 [x, x, x, x, x, x, x, x, x, x]"}
	for i := 1; i < 9; i++ {
		bomb = append(bomb, fmt.Sprintf("  a%d: &a%d [%s]", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", ")))
	}
	return map[string]func() string{
		"many tiny manifests":         func() string { return fill("", "- {id: 1}\n", "") },
		"one huge flow list":          func() string { return fill(fmt.Sprintf(pod, "a"), "1,", "1]\n") },
		"one huge block list":         func() string { return fill("version: v1beta1\nid: a\nlabels:\n", "  - 1\n", "") },
		"deep nesting":                func() string { return fill("", strings.Repeat("[", 5000)+strings.Repeat("]", 5000)+"\n", "") },
		"many documents":              func() string { return fill("", "---\nid: 1\n", "") },
		"many keys under the bound":   func() string { return padded(keys(), "x") },
		"flow list under the bound":   func() string { return padded(fmt.Sprintf(pod, "a")+strings.Repeat("1,", marks-20)+"1]\n", "x") },
		"long list items under bound": longItems,
		"one long YAML string":        func() string { return fill("version: v1beta1\nid: a\nlabels:\n  a: ", "x", "\n") },
		"long YAML strings":           func() string { return padded("", "x") },
		"long strings of < and &":     func() string { return padded("", "<&") },
		"long escapes":                func() string { return padded("", `\x01`) },
		"one long JSON string":        func() string { return fill(`{"version":"v1beta1","id":"a","labels":{"a":"`, "<", `"}}`) },
		"JSON list of tiny items":     func() string { return "[" + fill("", `{"id":1},`, `{"id":1}`) + "]" },
		"alias bomb and long strings": func() string { return padded(strings.Join(bomb, "\n")+"\n", "x") },
		"comment of structure marks":  func() string { return fill("version: v1beta1\nid: a\n# ", ":,-?[{", "\n") },
	}
}

// writeHostile writes the file make makes, checks its size, and gives
// the memory it took back to the system.
func writeHostile(t *testing.T, file string, make func() string) {
	t.Helper()
	data := make()
	if len(data) > manifest.MaxSize || len(data) < manifest.MaxSize*9/10 {
		t.Fatalf("the file is %d bytes, want just under %d", len(data), manifest.MaxSize)
	}
	if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	data = ""
	debug.FreeOSMemory()
}

// rssChildEnv names the hostlet binary and the file a child of the test
// binary validates, to measure the peak RSS of that validation alone: a
// process forked from the test process (grown by the files it made)
// would count the test's memory in its own peak (Linux keeps the parent's
// high-water mark across the vfork and exec).
const rssChildEnv = "HOSTLET_TEST_RSS_CHILD"

// rssChild, in a child started by validateRSS, runs `hostlet validate`
// on the file named in rssChildEnv and prints its exit code and peak
// RSS; it reports whether it ran.
func rssChild() bool {
	spec, ok := os.LookupEnv(rssChildEnv)
	if !ok {
		return false
	}
	bin, file, _ := strings.Cut(spec, "\n")
	cmd := exec.Command(bin, "validate", file)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	fmt.Printf("%d %d\n%s", code, cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss<<10, out)
	os.Exit(0)
	return true
}

// validateRSS runs `hostlet validate file` from a child of the test
// binary (rssChild) and returns its peak RSS in bytes; the command must
// end (valid or not) within a minute.
func validateRSS(t *testing.T, bin, file string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), rssChildEnv+"="+bin+"\n"+file)
	out, err := cmd.Output()
	if ctx.Err() != nil {
		t.Fatalf("hostlet validate %s did not end within a minute", filepath.Base(file))
	}
	var code int
	var rss int64
	if _, serr := fmt.Sscanf(string(out), "%d %d", &code, &rss); err != nil || serr != nil || code > 1 {
		t.Fatalf("hostlet validate %s: %v\n%.2000s", filepath.Base(file), err, out)
	}
	return rss
}

// TestHostileFileMemoryBounded (issue 30, finding 5): `hostlet validate`
// of any hostile file of 10 MiB peaks at less than 64 MiB above what it
// takes for a one-pod file.
func TestHostileFileMemoryBounded(t *testing.T) {
	const budget = 64 << 20
	bin := buildHostlet(t)
	dir := t.TempDir()
	small := filepath.Join(dir, "small.yaml")
	if err := os.WriteFile(small, []byte("version: v1beta1\nid: a\ncontainers:\n- name: app\n  image: nginx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	debug.FreeOSMemory()
	idle := max(validateRSS(t, bin, small), validateRSS(t, bin, small))
	t.Logf("one pod: peak RSS %.1f MiB", float64(idle)/(1<<20))
	for name, make := range hostileFiles() {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			writeHostile(t, file, make)
			rss := validateRSS(t, bin, file)
			t.Logf("peak RSS %.1f MiB (%+.1f MiB)", float64(rss)/(1<<20), float64(rss-idle)/(1<<20))
			if rss-idle > budget {
				t.Errorf("peak RSS %.1f MiB above the one-pod file's, want at most %d MiB", float64(rss-idle)/(1<<20), budget>>20)
			}
		})
	}
}
