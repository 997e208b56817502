// Command hostlet-sops decrypts SOPS files for hostlet (docs/secrets.md).
// It reads one request on standard input (the host's age identities and
// the files, each with its format) and writes one answer on standard
// output (each file's plaintext, or why it could not be decrypted). It
// reads no file, no environment variable and no home folder, writes
// nothing but its answer, and uses age keys only: the keys come in the
// request. It is a program of its own, in a module of its own, because
// getsops/sops links every cloud KMS client; hostlet itself links none.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/getsops/sops/v3/logging"
	"github.com/sirupsen/logrus"
)

// maxRequest bounds the request read from standard input: hostlet sends
// at most 64 MiB of files (its own bound) and the keys.
const maxRequest = 96 << 20

func main() {
	// sops logs every decryption at info level; nothing of it is wanted.
	logging.SetLevel(logrus.PanicLevel)
	// A soft bound on the heap: the collector works harder near it
	// (precheck bounds what one file can make).
	debug.SetMemoryLimit(1 << 30)
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "hostlet-sops takes no arguments: it reads a request from standard input (see hostlet's docs/secrets.md)")
		os.Exit(2)
	}
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hostlet-sops:", err)
		os.Exit(1)
	}
}

// serve answers the one request read from in.
func serve(in io.Reader, out io.Writer) error {
	b, err := io.ReadAll(io.LimitReader(in, maxRequest+1))
	if err != nil {
		return fmt.Errorf("read the request: %w", err)
	}
	if len(b) > maxRequest {
		return fmt.Errorf("the request is over %d MiB", maxRequest>>20)
	}
	var req Request
	if err := json.Unmarshal(b, &req); err != nil {
		return fmt.Errorf("decode the request: %w", err)
	}
	ids, err := parseIdentities(req)
	if err != nil {
		return err
	}
	ans := Answer{Files: make([]Result, len(req.Files))}
	for i, f := range req.Files {
		ans.Files[i] = result(decryptOne(ids, f))
	}
	w := bufio.NewWriter(out)
	if err := json.NewEncoder(w).Encode(ans); err != nil {
		return fmt.Errorf("write the answer: %w", err)
	}
	return w.Flush()
}

// result is the answer for one file.
func result(d *decrypted, err error) Result {
	if err == nil {
		return Result{Plaintext: d.plain, Values: d.values}
	}
	var f *failure
	if errors.As(err, &f) {
		return Result{Kind: f.kind, Error: f.msg}
	}
	return Result{Kind: KindFormat, Error: bounded(err.Error())}
}
