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
	"syscall"
)

// Set with -ldflags "-X main.version=... -X main.commit=...".
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newRootCommand().ExecuteContext(ctx)
	os.Exit(exitCode(err))
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
			fmt.Fprintln(w, "hostlet:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(w, "hostlet:", err)
	return 1
}
