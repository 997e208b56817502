// Command hostlet-notify sends hostlet's chat notifications through the
// shoutrrr library, so that the library stays out of the agent's binary
// and memory: hostlet (internal/notify) runs it once to check each chat
// target's URL at start, and once per message and attempt, killing it
// when the attempt's time is up.
//
// It takes no arguments and reads no environment of its own (hostlet
// passes it only the proxy and CA settings, which Go's HTTP client reads):
// a chat URL carries tokens, and a process's argv and environment are
// readable in /proc. It reads one JSON request (chatwire.Request, at most
// chatwire.MaxRequest bytes) on stdin:
//
//	{"op": "check", "url": "slack://..."}
//	{"op": "send", "url": "slack://...", "text": "..."}
//
// check finds the URL's service and checks the URL's shape, sending
// nothing; send sends the text, once. Exit status: 0 done; 1 the URL
// refused or the send failed, with one line on stderr (a check's never
// names a part of the URL, a send's has the URL's secrets scrubbed); 2
// the input is not a request. Nothing is written to stdout.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"

	"github.com/nicholas-fedor/shoutrrr/pkg/router"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"

	"github.com/hostlet/hostlet/internal/notify/chatwire"
	"github.com/hostlet/hostlet/internal/textcap"
)

func main() {
	os.Exit(run(os.Stdin, os.Stderr))
}

// run serves the request of in, writes its failure (one line) to errOut,
// and returns the exit status.
func run(in io.Reader, errOut io.Writer) int {
	req, err := read(in)
	if err != nil {
		fmt.Fprintln(errOut, oneLine(err.Error()))
		return chatwire.ExitBadRequest
	}
	svc, err := locate(req.URL)
	if err == nil && req.Op == chatwire.OpSend {
		if err = svc.Send(req.Text, &types.Params{}); err != nil {
			err = fmt.Errorf("send: %w", chatwire.Scrub(err, req.URL))
		}
	}
	if err != nil {
		fmt.Fprintln(errOut, oneLine(err.Error()))
		return chatwire.ExitRefused
	}
	return chatwire.ExitOK
}

// read reads and decodes the request; its errors never quote the input.
func read(in io.Reader) (chatwire.Request, error) {
	var req chatwire.Request
	data, err := io.ReadAll(io.LimitReader(in, chatwire.MaxRequest+1))
	switch {
	case err != nil:
		return req, fmt.Errorf("read the request: %w", err)
	case len(data) > chatwire.MaxRequest:
		return req, fmt.Errorf("the request is over %d bytes", chatwire.MaxRequest)
	}
	if err := json.Unmarshal(data, &req); err != nil {
		// A syntax error names an offset only; a type error may name a
		// value: say neither.
		return req, errors.New("the input is not a JSON request")
	}
	switch {
	case req.Op != chatwire.OpCheck && req.Op != chatwire.OpSend:
		return req, fmt.Errorf("op %q is neither %s nor %s", textcap.Truncate(req.Op, textcap.ExcerptBytes), chatwire.OpCheck, chatwire.OpSend)
	case req.URL == "":
		return req, errors.New("the request has no url")
	}
	return req, nil
}

// locate makes the shoutrrr service of raw; the error never quotes raw.
func locate(raw string) (types.Service, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// url.Parse's error quotes the URL: say only what is wrong.
		return nil, errors.New("not a URL")
	case u.Scheme == "":
		return nil, errors.New("the URL has no scheme (slack://, ...)")
	}
	scheme := u.Scheme
	var r router.ServiceRouter // no logger: the library's logs would quote URLs
	svc, err := r.Locate(raw)
	switch {
	case errors.Is(err, router.ErrUnknownService):
		return nil, fmt.Errorf("scheme %q is neither http(s) nor a chat service shoutrrr knows (slack, discord, telegram, smtp, ...)", scheme)
	case err != nil:
		return nil, fmt.Errorf("not a valid %s URL (see shoutrrr's docs for %s)", scheme, scheme)
	}
	return svc, nil
}

// oneLine is s on one line, cut to textcap.ErrorTextBytes.
func oneLine(s string) string {
	return textcap.Truncate(strings.Join(strings.Fields(s), " "), textcap.ErrorTextBytes)
}
