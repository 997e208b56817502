package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/atomicfile"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/testkit/etcdtest"
	"github.com/hostlet/hostlet/internal/textout"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

// forged is text a forged report holds: escape sequences, C1 controls,
// bidi overrides, and newlines that would draw rows of their own.
const forged = "x\x1b[2J\x1b]0;pwned\a\u009b31m\u202eevil\r\nFAKE-ROW  yes  0000  1/1 Running\n\tFAKE-TAB"

// mustBeTerminalSafe fails when out holds a control or bidi character
// other than the output's own newlines, or a line a forged value drew.
func mustBeTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	for _, r := range out {
		if r != '\n' && textout.UnsafeRune(r) && r != '\t' {
			t.Errorf("%s holds %U:\n%q", what, r, out)
			return
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "FAKE-") {
			t.Errorf("%s: a forged value drew its own line %q:\n%s", what, line, out)
		}
	}
}

// forgedDoc is a host's report with forged text in every field shown.
func forgedDoc(host string) api.Document {
	at := time.Date(2026, 12, 5, 1, 2, 3, 0, time.UTC)
	return api.Document{
		Hostname: host, Version: "v1" + forged, Time: at,
		LastSync: hsync.SyncInfo{Start: at, Error: "sync" + forged},
		Labels:   map[string]string{"role": "web"},
		Sources:  []sources.Status{{Name: "src" + forged, Type: "git" + forged, Revision: "rev" + forged, Error: "err" + forged, Notice: "notice" + forged}},
		Pods: []hsync.PodStatus{{
			ID: "pod" + forged, Source: "src", Revision: "rev" + forged, Phase: "Running" + forged, Reason: "why" + forged, Message: "msg" + forged,
			Containers: []hsync.ContainerStatus{{Name: "app" + forged, Image: "img" + forged, State: "running" + forged}},
			Rollout:    &hsync.Rollout{State: hsync.RolloutHeld, Reason: "held" + forged, Hold: &hsync.Hold{By: "ops" + forged, Since: at}},
		}},
		StateErrors: []atomicfile.Problem{{File: "f" + forged, Op: atomicfile.OpRead, Error: "e" + forged, KeptAs: "k" + forged, Since: at}},
		Rejected:    []validate.Rejection{{ID: "rej" + forged, Source: "src" + forged, Reasons: []string{"r1" + forged, "r2" + forged}}},
	}
}

// TestForgedReportCannotDrawOnTheTerminal: a host report in etcd with
// control characters, escape sequences, bidi overrides and newlines in
// every field is shown by `hostlet status --host` and `hostlet fleet
// status` with each of them as '?', on the rows it belongs to; -o json
// stays JSON and keeps the values.
func TestForgedReportCannotDrawOnTheTerminal(t *testing.T) {
	etcd := etcdtest.Start(t)
	cli := etcd.Client(t)
	const prefix = "/fleet"
	doc := forgedDoc("web-1")
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	statusKey, aliveKey, _ := reporter.Keys(prefix, "web-1")
	etcdtest.Put(t, cli, statusKey, string(b))
	etcdtest.Put(t, cli, aliveKey, "alive")
	cfg := writeFile(t, t.TempDir(), "ops.yaml", fmt.Sprintf("hostname: ops-1\netcd: {endpoints: [%s], prefix: %s}\n", etcd.Endpoint, prefix))

	for _, args := range [][]string{
		{"status", "--config", cfg, "--host", "web-1"},
		{"fleet", "status", "--config", cfg},
	} {
		res := runCLI(t, args...)
		if res.code != 0 {
			t.Fatalf("%v: exit %d: %s", args, res.code, res.stderr)
		}
		mustBeTerminalSafe(t, strings.Join(args[:1], " "), res.stdout+res.stderr)
		if !strings.Contains(res.stdout, "x?[2J?]0;pwned??31m?evil??FAKE-ROW") {
			t.Errorf("%v: the forged text is not shown as one line with '?':\n%s", args, res.stdout)
		}
	}
	res := runCLI(t, "status", "--config", cfg, "--host", "web-1", "-o", "json")
	var got statusJSON
	if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
		t.Fatalf("status -o json is not JSON: %v\n%s", err, res.stdout)
	}
	if got.Pods[0].ID != doc.Pods[0].ID || got.Rejected[0].Reasons[1] != doc.Rejected[0].Reasons[1] {
		t.Errorf("status -o json changed the values: %+v", got.Document)
	}
}

// TestForgedTextInDiffAndPublishStaysOnItsLine: what diff and publish
// print from outside (a host's rejection reasons, a release's halt
// reason, an error) stays on its line, without control characters.
func TestForgedTextInDiffAndPublishStaysOnItsLine(t *testing.T) {
	hp := hostplan.Plan{Host: "web-1", Planned: true, Errors: []string{"error" + forged},
		Pods:     []hostplan.PodPlan{{ID: "pod" + forged, Source: "src" + forged, Action: "update", Changes: []hostplan.Change{{Container: "app" + forged, Action: string(hsync.ActionRecreate), Reasons: []string{"why" + forged}}}}},
		Rejected: []hostplan.RejectedManifest{{ID: "rej" + forged, Source: "src", Reasons: []string{"reason" + forged}}},
	}
	for _, color := range []bool{false, true} {
		var b strings.Builder
		textout.Plan(&b, hp, color)
		out := b.String()
		if color {
			// Its own colours are the only escapes.
			out = strings.NewReplacer("\x1b[31m", "", "\x1b[32m", "", "\x1b[33m", "", "\x1b[36m", "", "\x1b[0m", "").Replace(out)
		}
		mustBeTerminalSafe(t, fmt.Sprintf("diff (color %v)", color), out)
	}
	var b strings.Builder
	out := &publishOut{w: textout.TerminalSafe(&b)}
	out.printf("%s: halted: %s\n", "wave 1", "reason"+forged)
	out.printf("%v\n", errors.New("host web-1"+forged))
	mustBeTerminalSafe(t, "publish", b.String())
}

// TestFileNamesAndErrorsCannotDrawOnTheTerminal: a committed file whose
// name holds escape sequences, invisible or bidi characters, and an error
// text from outside (the API, the engine) reach the terminal with every
// unsafe rune as '?': validate's error lines and the top-level error line.
func TestFileNamesAndErrorsCannotDrawOnTheTerminal(t *testing.T) {
	root := t.TempDir()
	name := "b\x1b[31mRED\u202e\u200b\u009b.yaml"
	writeFile(t, root, name, "version: v1beta1\nid: web\ncontainers: []\n")
	res := runCLI(t, "validate", root)
	if res.code != 1 || !strings.Contains(res.stdout, "b?[31mRED???.yaml") {
		t.Errorf("validate: exit %d, want 1 naming the file with '?':\n%q", res.code, res.stdout)
	}
	mustBeTerminalSafe(t, "validate", res.stdout+res.stderr)

	var stderr strings.Builder
	exitCodeTo(&stderr, fmt.Errorf("API: %s", forged))
	mustBeTerminalSafe(t, "error line", stderr.String())
	stderr.Reset()
	exitCodeTo(&stderr, errors.Join(errors.New("first\x1b[2J"), errors.New("second")))
	if got, want := stderr.String(), "hostlet: first?[2J; second\n"; got != want {
		t.Errorf("joined errors: %q, want %q", got, want)
	}
}
