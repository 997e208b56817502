package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nicholas-fedor/shoutrrr/pkg/router"
	"github.com/nicholas-fedor/shoutrrr/pkg/types"

	"github.com/hostlet/hostlet/internal/clock"
)

// chat sends notifications as text to a chat service through shoutrrr.
//
// A shoutrrr service's Send takes no context, and a few services (generic,
// googlechat) use http.DefaultClient, which has no timeout: a Send runs on
// a goroutine of its own and an attempt that outlives its timeout is left
// to end on its own (Run waits for it a while when it stops). busy holds a
// token while a Send runs, so a target leaves at most one such Send behind
// and never sends twice at once.
type chat struct {
	raw  string // the URL, for scrubbing errors
	svc  types.Service
	busy chan struct{}
}

// newChat makes the shoutrrr service of raw; the error never quotes raw.
func newChat(raw, scheme string) (*chat, error) {
	var r router.ServiceRouter // no logger: the library's logs would quote URLs
	svc, err := r.Locate(raw)
	switch {
	case errors.Is(err, router.ErrUnknownService):
		return nil, fmt.Errorf("scheme %q is neither http(s) nor a chat service shoutrrr knows (slack, discord, telegram, smtp, ...)", scheme)
	case err != nil:
		return nil, fmt.Errorf("not a valid %s URL (see shoutrrr's docs for %s)", scheme, scheme)
	}
	return &chat{raw: raw, svc: svc, busy: make(chan struct{}, 1)}, nil
}

func (c *chat) send(ctx context.Context, n Notification) error {
	select {
	case c.busy <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("the previous message is still being sent: %w", ctx.Err())
	}
	done := make(chan error, 1)
	text := n.Text()
	go func() {
		defer func() { <-c.busy }()
		done <- c.svc.Send(text, &types.Params{})
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("send: %w", scrub(err, c.raw))
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("send: %w", ctx.Err())
	}
}

// wait waits up to d (on clk) for a Send still running to end, and
// reports whether none is left running.
func (c *chat) wait(clk clock.Clock, d time.Duration) bool {
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case c.busy <- struct{}{}:
		<-c.busy
		return true
	case <-t.C():
		return false
	}
}
