package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/helperexec"
	"github.com/hostlet/hostlet/internal/notify/chatwire"
)

// checkTimeout bounds the helper's check of one chat URL at New.
const checkTimeout = 10 * time.Second

// waitDelay is how long a helper killed at its attempt's end may keep
// its output open (through a child of its own) before Wait gives up on
// it.
const waitDelay = time.Second

// helperEnv names the variables of hostlet's environment the helper is
// given, when set: the proxy and CA settings Go's HTTP client reads, so
// that chat targets reach the network as the webhooks do. Nothing else
// (a token in hostlet's environment stays out of the helper's).
var helperEnv = []string{
	"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// errNoHelper is New's error for chat targets without the helper.
var errNoHelper = errors.New("chat targets need the " + chatwire.HelperName + " helper beside hostlet or on PATH (make build builds it into bin/)")

// chat sends notifications as text to a chat service: each attempt runs
// the hostlet-notify helper (cmd/hostlet-notify, which links the shoutrrr
// library so that hostlet does not), the URL and the text on its stdin,
// and kills it when the attempt's context ends. A target sends one
// message at a time, so at most one helper per target runs.
type chat struct {
	raw    string // the URL, never in argv, env or a log
	helper string // the helper's path
	env    []string
}

// findHelper returns the helper's path: explicit when set, else the one
// beside the running executable (its symlinks resolved), else the one on
// PATH.
func findHelper(explicit string) (string, error) {
	p, err := helperexec.Find(chatwire.HelperName, explicit)
	if err != nil {
		return "", errNoHelper
	}
	return p, nil
}

// newChat makes the chat target of raw, its URL checked by the helper
// (bounded by checkTimeout). The error never quotes raw.
func newChat(raw, helper string) (*chat, error) {
	c := &chat{raw: raw, helper: helper, env: []string{}}
	for _, k := range helperEnv {
		if v, ok := os.LookupEnv(k); ok {
			c.env = append(c.env, k+"="+v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	err := c.run(ctx, chatwire.Request{Op: chatwire.OpCheck, URL: raw})
	var r *refusal
	switch {
	case errors.As(err, &r):
		return nil, r
	case err != nil:
		return nil, fmt.Errorf("the URL was not checked: %w", err)
	}
	return c, nil
}

func (c *chat) send(ctx context.Context, n Notification) error {
	if err := c.run(ctx, chatwire.Request{Op: chatwire.OpSend, URL: c.raw, Text: n.Text()}); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// refusal is the helper's answer of chatwire.ExitRefused: its line.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

// run runs the helper on req until it exits or ctx ends (then it is
// killed). A refusal is a *refusal, its line as the helper wrote it (the
// helper keeps the URL out of it); any other error is scrubbed of the
// URL's secrets here (a crash's message may quote anything).
func (c *chat) run(ctx context.Context, req chatwire.Request) error {
	in, err := json.Marshal(req)
	switch {
	case err != nil:
		return fmt.Errorf("encode the request: %w", err)
	case len(in) > chatwire.MaxRequest:
		return fmt.Errorf("the request is over %d bytes", chatwire.MaxRequest)
	}
	cmd := exec.CommandContext(ctx, c.helper)
	cmd.Env = c.env
	cmd.Stdin = bytes.NewReader(in)
	stderr := &capped{max: 4 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	err = cmd.Run()
	line, _, _ := strings.Cut(strings.TrimSpace(stderr.buf.String()), "\n")
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("%s killed: %w", chatwire.HelperName, ctx.Err())
	case cmd.ProcessState != nil && cmd.ProcessState.ExitCode() == chatwire.ExitRefused && line != "":
		return &refusal{msg: line}
	case line != "":
		return chatwire.Scrub(fmt.Errorf("%s: %w: %s", chatwire.HelperName, err, line), c.raw)
	}
	return chatwire.Scrub(fmt.Errorf("%s: %w", chatwire.HelperName, err), c.raw)
}

// capped keeps the first max bytes written to it.
type capped struct {
	buf bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
