package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestForceExitAfterGraceOrSecondSignal: after a first signal, the process
// is ended (status 1, with a line saying so) once the grace has passed, or
// at once on a second signal; without a signal, never.
func TestForceExitAfterGraceOrSecondSignal(t *testing.T) {
	tests := []struct {
		name    string
		signals int
		grace   time.Duration
		want    string
	}{
		{"grace passed", 1, 50 * time.Millisecond, "not stopped within 50ms of terminated"},
		{"second signal", 2, time.Hour, "terminated again while stopping"},
		{"no signal", 0, 20 * time.Millisecond, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sigs := make(chan os.Signal, 2)
			for range tt.signals {
				sigs <- syscall.SIGTERM
			}
			var out bytes.Buffer
			code := make(chan int, 1)
			go forceExit(sigs, &out, tt.grace, func(c int) { code <- c })
			select {
			case c := <-code:
				if tt.want == "" {
					t.Fatalf("exit(%d) without a signal", c)
				}
				if c != 1 || !strings.Contains(out.String(), tt.want) || !strings.Contains(out.String(), "containers keep running") {
					t.Errorf("exit(%d) with %q, want exit(1) saying %q", c, out.String(), tt.want)
				}
			case <-time.After(max(5*time.Second, 10*tt.grace)):
				if tt.want != "" {
					t.Fatalf("no exit within 5s")
				}
			}
		})
	}
}

// stuckEngine is a Docker socket that accepts connections and never
// answers: every engine call of hostlet waits on it.
func stuckEngine(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{}, 1)
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return sock, accepted
}

// TestSignalEndsRunWithinBound (issue 30, finding 4: hostlet ignored
// SIGTERM while a validation looped): `hostlet run` whose engine does not
// answer ends within the grace of a SIGTERM, and at once on a second one,
// with a line saying so each time.
func TestSignalEndsRunWithinBound(t *testing.T) {
	bin := buildHostlet(t)
	for _, signals := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d signals", signals), func(t *testing.T) {
			sock, accepted := stuckEngine(t)
			dir := t.TempDir()
			cfg := filepath.Join(dir, "hostlet.yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf("hostname: h\ninstance: stop-test\nstateDir: %s\ndocker: {host: \"unix://%s\", infraImage: busybox}\nsources:\n  - {name: local, type: file, path: %s}\n", filepath.Join(dir, "state"), sock, dir)), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "run", "--config", cfg)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case <-accepted:
			case err := <-exited:
				t.Fatalf("hostlet run ended before calling the engine: %v\n%s", err, out.String())
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				t.Fatalf("hostlet run did not call the engine within a minute\n%s", out.String())
			}
			start := time.Now()
			for range signals {
				// Ended at the first already: what the bound asks.
				if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
					t.Fatal(err)
				}
			}
			bound := stopGrace + 10*time.Second
			if signals == 2 {
				bound = 10 * time.Second
			}
			select {
			case <-exited:
			case <-time.After(bound):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("hostlet run did not end within %s of %d SIGTERM\n%s", bound, signals, out.String())
			}
			t.Logf("ended %s after %d SIGTERM: %s", time.Since(start).Round(time.Millisecond), signals, strings.TrimSpace(out.String()))
			if !strings.Contains(out.String(), "hostlet:") && !strings.Contains(out.String(), "stopping") {
				t.Errorf("no line says why hostlet ended:\n%s", out.String())
			}
		})
	}
}
