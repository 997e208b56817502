package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiffErrors checks the errors diff must report, saying what is wrong,
// with exit 1: --against ref: for a git source without --source, an
// unknown source in --source, a --source folder that is not a git checkout
// when a ref is asked, and malformed flags. The git source's URL is never
// contacted (the fleet's URL fails the test when it is).
func TestDiffErrors(t *testing.T) {
	f := newRefFleet(t)
	writeFile(t, f.repo.dir, "common/node-info.yaml", nodeInfoYAML)
	f.commit(t, "A", "add node-info")
	notCheckout := t.TempDir()
	writeFile(t, notCheckout, "common/node-info.yaml", nodeInfoYAML)
	web1 := f.configs[0]

	for _, tc := range []struct {
		name string
		args []string
		// want is in stdout (a host's error) or stderr (a usage error).
		want string
	}{
		{
			name: "ref without --source for the git source",
			args: []string{"diff", "--config", web1, "--against", "ref:HEAD"},
			want: "--against ref:HEAD: git source fleet needs --source fleet=DIR (a checkout of " + f.vars["@URL@"] + "/ops/fleet.git)",
		},
		{
			name: "ref with --source for another source only",
			args: []string{"diff", "--config", web1, "--source", "local=" + notCheckout, "--against", "ref:HEAD"},
			want: "git source fleet needs --source fleet=DIR",
		},
		{
			name: "unknown source name",
			args: []string{"diff", "--config", web1, "--source", "unknown=" + f.repo.dir},
			want: `--source unknown: no source named "unknown" in ` + web1,
		},
		{
			name: "unknown source name with ref",
			args: []string{"diff", "--config", web1, "--source", "fleet=" + f.repo.dir, "--source", "unknown=" + f.repo.dir, "--against", "ref:HEAD"},
			want: `--source unknown: no source named "unknown" in ` + web1,
		},
		{
			name: "folder that is not a git checkout, with ref",
			args: []string{"diff", "--config", web1, "--source", "fleet=" + notCheckout, "--against", "ref:HEAD"},
			want: "--source fleet=" + notCheckout + ": not a git checkout, and --against ref: needs one",
		},
		{
			name: "revision that does not exist",
			args: []string{"diff", "--config", web1, "--source", "fleet=" + f.repo.dir, "--against", "ref:no-such-branch"},
			want: "--against ref:no-such-branch: not a revision of " + f.repo.dir,
		},
		{
			name: "against neither live, status nor ref",
			args: []string{"diff", "--config", web1, "--against", "yesterday"},
			want: `--against "yesterday": want live, status or ref:REV`,
		},
		{
			name: "ref without a revision",
			args: []string{"diff", "--config", web1, "--against", "ref:"},
			want: `--against "ref:": want live, status or ref:REV`,
		},
		{
			name: "--source without NAME=",
			args: []string{"diff", "--config", web1, "--source", f.repo.dir},
			want: `want NAME=DIR`,
		},
		{
			name: "unknown output format",
			args: []string{"diff", "--config", web1, "-o", "yaml"},
			want: `-o "yaml": want text or json`,
		},
		{
			name: "config file that does not exist",
			args: []string{"diff", "--config", filepath.Join(t.TempDir(), "nope.yaml"), "--source", "fleet=" + f.repo.dir, "--against", "ref:HEAD"},
			want: "nope.yaml",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, tc.args...)
			if r.code != 1 {
				t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, tc.want) {
				t.Errorf("output does not say %q\nstdout:\n%s\nstderr:\n%s", tc.want, r.stdout, r.stderr)
			}
			// No plan is printed for a host whose plan could not be made:
			// "Plan: 0 to create, ..." would read as "no changes".
			if strings.Contains(r.stdout, "Plan:") {
				t.Errorf("a plan was printed although none could be made:\n%s", r.stdout)
			}
		})
	}

	// In JSON the host says it has no plan, and why.
	r := runCLI(t, "diff", "--config", web1, "--config", f.configs[1], "--source", "fleet="+notCheckout, "--against", "ref:HEAD", "-o", "json")
	if r.code != 1 {
		t.Errorf("-o json: exit %d, want 1", r.code)
	}
	var rep diffReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("-o json: %v\n%s", err, r.stdout)
	}
	if len(rep.Hosts) != 2 {
		t.Fatalf("-o json: %d hosts, want 2:\n%s", len(rep.Hosts), r.stdout)
	}
	for _, h := range rep.Hosts {
		// The folder lacks hosts/<host> (an error of its own, on one
		// line; its wording is the file source's), and is no checkout.
		want := "--source fleet=" + notCheckout + ": not a git checkout, and --against ref: needs one"
		if h.Planned || len(h.Errors) != 2 || !strings.HasPrefix(h.Errors[0], "fleet:hosts/"+h.Host+": ") ||
			strings.Contains(h.Errors[0], "\n") || h.Errors[1] != want {
			t.Errorf("-o json: host %s: planned=%v errors=%q, want planned=false, the missing folder, then %q", h.Host, h.Planned, h.Errors, want)
		}
	}
}

// TestDiffAgainstStatusErrors: --against status fails, saying why, with
// exit 1 and no plan, when the host's API is down, answers for another
// host, or does not answer in time (CI must not hang).
func TestDiffAgainstStatusErrors(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "manifests/node-info.yaml", nodeInfoYAML)
	config := func(listen string) string {
		return writeFile(t, dir, "hostlet.yaml", "hostname: web-1\nstateDir: "+dir+"/state\nlisten: "+listen+
			"\nsources:\n  - {name: local, type: file, path: "+dir+"/manifests}\n")
	}

	// Nothing listens.
	closed := httptest.NewServer(http.NotFoundHandler())
	addr := closed.Listener.Addr().String()
	closed.Close()
	r := runCLI(t, "diff", "--config", config(addr), "--against", "status")
	if r.code != 1 || !strings.Contains(r.stdout, "error: host web-1 unreachable") || strings.Contains(r.stdout, "Plan:") {
		t.Errorf("API down: exit %d, want 1 and \"host web-1 unreachable\", no plan\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Another host answers.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"hostname": "web-2", "pods": []}`))
	}))
	defer other.Close()
	r = runCLI(t, "diff", "--config", config(other.Listener.Addr().String()), "--against", "status")
	if r.code != 1 || !strings.Contains(r.stdout, `is host "web-2", not "web-1"`) {
		t.Errorf("another host's API: exit %d, want 1 and the hostnames\n%s%s", r.code, r.stdout, r.stderr)
	}

	// An API that never answers: diff gives up after statusTimeout.
	release := make(chan struct{})
	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer stuck.Close()
	defer close(release)
	defer func(d time.Duration) { statusTimeout = d }(statusTimeout)
	statusTimeout = 500 * time.Millisecond
	start := time.Now()
	r = runCLI(t, "diff", "--config", config(stuck.Listener.Addr().String()), "--against", "status")
	if took := time.Since(start); r.code != 1 || !strings.Contains(r.stdout, "deadline exceeded") || took > 30*time.Second {
		t.Errorf("API that never answers: exit %d after %s, want 1 and a deadline error\n%s%s", r.code, took, r.stdout, r.stderr)
	}
}
