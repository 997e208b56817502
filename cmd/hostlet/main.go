// Command hostlet is a declarative, GitOps-style host agent: it pulls pod
// manifests from git, files, HTTP, etcd and push sources, validates them and
// makes the local Docker engine match them. This package is wiring only.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hostlet/hostlet/internal/textout"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	// Signals reach both: the context stops the command; forceExit ends
	// the process if stopping takes too long.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go forceExit(sigs, os.Stderr, stopGrace, os.Exit)
	err := newRootCommand().ExecuteContext(ctx)
	os.Exit(exitCode(err))
}

// stopGrace is how long hostlet may take to stop after SIGTERM or SIGINT:
// `hostlet run` shuts its API down (5 s for the requests in flight) and
// ends its syncs, whose engine calls stop with the context.
const stopGrace = 30 * time.Second

// forceExit ends the process (exit status 1, with a line on w) when, after
// a first signal, it has not ended within grace, or at once on a second
// signal: a step that does not heed its context cannot keep hostlet from
// stopping. Containers are left as they are: they are Docker's, and the
// next hostlet adopts them.
func forceExit(sigs <-chan os.Signal, w io.Writer, grace time.Duration, exit func(int)) {
	first := <-sigs
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case s := <-sigs:
		fmt.Fprintf(w, "hostlet: %s again while stopping (after %s): exiting now; containers keep running\n", s, first)
	case <-t.C:
		fmt.Fprintf(w, "hostlet: not stopped within %s of %s: exiting now; containers keep running\n", grace, first)
	}
	exit(1)
}

// exitError carries an exit code other than 1, or a failure already
// reported (silent).
type exitError struct {
	code   int
	silent bool
	err    error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

func exitCode(err error) int { return exitCodeTo(os.Stderr, err) }

// exitCodeTo maps err to the exit code and prints it to w unless it was
// already reported.
func exitCodeTo(w io.Writer, err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if !ee.silent && ee.err != nil {
			fmt.Fprintln(w, "hostlet:", errorText(ee.err))
		}
		return ee.code
	}
	fmt.Fprintln(w, "hostlet:", errorText(err))
	return 1
}

// errorText is an error's text as a terminal may show it, often from the
// API, the engine or a file's name: on one line (errors joined are
// separated by "; "), through textout.Text.
func errorText(err error) string {
	return textout.Text(strings.ReplaceAll(err.Error(), "\n", "; "))
}
