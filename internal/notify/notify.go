package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	gosync "sync"
	"sync/atomic"

	"github.com/hostlet/hostlet/internal/clock"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
)

// DefaultQueueSize is how many notifications a target's queue holds by
// default.
const DefaultQueueSize = 100

// subscription is the buffer of Run's subscription to the events log: what
// the log may offer while Run hands the previous events to the queues.
const subscription = 256

// Options are what a Notifier needs besides its targets. Every field is
// optional.
type Options struct {
	// Hostname is the "host" of every notification.
	Hostname string
	// Version makes the webhooks' User-Agent, hostlet/<version>.
	Version string
	// Revision returns a pod's revision for its notifications; nil: "".
	// It is called once per notification sent, on Run's goroutine.
	Revision func(pod string) string
	// Clock times the waits between attempts (nil: clock.Real).
	Clock clock.Clock
	// Log receives what the targets do (nil: nothing is logged).
	Log *slog.Logger
	// QueueSize bounds each target's queue (0: DefaultQueueSize).
	QueueSize int
	// HTTPClient posts the webhooks (nil: a client of the Notifier's
	// own). Redirects are never followed, whatever the client says.
	HTTPClient *http.Client
	// Retry says how often and after what waits a notification is sent
	// again, and bounds one attempt.
	Retry Retry
	// Helper is the hostlet-notify executable that chat targets run (""
	// finds it beside the running executable, else on PATH). Webhook
	// targets need none.
	Helper string
}

// Notifier sends the events of an events log to the configured targets.
// Make it with New; Run delivers.
type Notifier struct {
	host     string
	revision func(string) string
	clock    clock.Clock
	log      *slog.Logger
	retry    Retry
	client   *http.Client
	targets  []*target
	// missed counts the events the log could not offer to Run (its
	// subscription was full), found by gaps in their sequence numbers.
	missed atomic.Uint64
	// subscribed is closed once Run has subscribed to the events log.
	subscribed chan struct{}
}

// Stat is what a target did since the Notifier was made.
type Stat struct {
	// Target is the target's name (notify[i] when it has none).
	Target string
	// Sent counts the notifications delivered, Failed those given up after
	// every attempt failed, Dropped those pushed out of a full queue.
	Sent, Failed, Dropped uint64
	// Queued is the number of notifications waiting now.
	Queued int
}

// New checks the targets, reads their urlFile and secretFile, and makes
// the Notifier. A chat target's URL is checked by running the helper once
// (up to 10 s each); without chat targets the helper is not looked for.
// Every error names the key at fault, and none quotes a URL.
func New(targets []config.Notify, opts Options) (*Notifier, error) {
	n := &Notifier{
		host: opts.Hostname, revision: opts.Revision, clock: clock.Or(opts.Clock), log: opts.Log,
		retry: opts.Retry.withDefaults(), subscribed: make(chan struct{}),
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	if opts.HTTPClient != nil {
		c := *opts.HTTPClient
		n.client = &c
	} else {
		n.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	n.client.CheckRedirect = noRedirect
	size := opts.QueueSize
	if size <= 0 {
		size = DefaultQueueSize
	}
	helper := gosync.OnceValues(func() (string, error) { return findHelper(opts.Helper) })
	var errs []string
	noHelper := false
	for i, c := range targets {
		t, err := n.newTarget(i, c, size, "hostlet/"+opts.Version, helper)
		switch {
		case errors.Is(err, errNoHelper):
			// One fault, said once.
			if !noHelper {
				errs = append(errs, err.Error())
			}
			noHelper = true
		case err != nil:
			errs = append(errs, err.Error())
		default:
			n.targets = append(n.targets, t)
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}
	return n, nil
}

// newTarget makes notify[i] from c; a chat target runs the helper that
// helper finds.
func (n *Notifier) newTarget(i int, c config.Notify, size int, userAgent string, helper func() (string, error)) (*target, error) {
	key := func(f string) string { return fmt.Sprintf("notify[%d].%s", i, f) }
	name := c.Name
	if name == "" {
		name = fmt.Sprintf("notify[%d]", i)
	}
	raw, urlKey := strings.TrimSpace(c.URL), key("url")
	if c.URLFile != "" {
		urlKey = key("urlFile")
		b, err := os.ReadFile(c.URLFile)
		if err != nil {
			return nil, fmt.Errorf("key %q: read the URL: %w", urlKey, err)
		}
		if raw = strings.TrimSpace(string(b)); raw == "" {
			return nil, fmt.Errorf("key %q: %s is empty", urlKey, c.URLFile)
		}
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// url.Parse's error quotes the URL: say only what is wrong.
		return nil, fmt.Errorf("key %q: not a URL", urlKey)
	case u.Scheme == "":
		return nil, fmt.Errorf("key %q: the URL has no scheme (https://, slack://, ...)", urlKey)
	}
	t := &target{name: name, endpoint: u.Scheme, queue: newQueue(size)}
	if len(c.Events) > 0 {
		t.events = map[string]bool{}
		for _, e := range c.Events {
			t.events[e] = true
		}
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		if c.SecretFile != "" {
			return nil, fmt.Errorf("key %q: only an http(s) webhook is signed, not a %s target", key("secretFile"), u.Scheme)
		}
		path, err := helper()
		if err != nil {
			return nil, fmt.Errorf("notify[%d]: %w", i, err)
		}
		if t.sender, err = newChat(raw, path); err != nil {
			return nil, fmt.Errorf("key %q: %w", urlKey, err)
		}
		return t, nil
	}
	if u.Host == "" {
		return nil, fmt.Errorf("key %q: the %s URL has no host", urlKey, u.Scheme)
	}
	t.endpoint = u.Scheme + "://" + u.Host
	w := &webhook{url: raw, client: n.client, userAgent: userAgent}
	if c.SecretFile != "" {
		b, err := os.ReadFile(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("key %q: read the secret: %w", key("secretFile"), err)
		}
		if w.secret = []byte(strings.TrimSpace(string(b))); len(w.secret) == 0 {
			return nil, fmt.Errorf("key %q: %s is empty", key("secretFile"), c.SecretFile)
		}
	}
	t.sender = w
	return t, nil
}

// Run subscribes to ev and delivers its notable events until ctx ends,
// then returns once every goroutine it started has ended (a chat helper
// still sending is killed and waited for). The notifications still
// queued then are dropped (not counted). Call it once.
func (n *Notifier) Run(ctx context.Context, ev *eventlog.Log) {
	if len(n.targets) == 0 {
		close(n.subscribed)
		return
	}
	ch, unsubscribe := ev.Subscribe(subscription)
	defer unsubscribe()
	close(n.subscribed)
	var wg gosync.WaitGroup
	for _, t := range n.targets {
		wg.Go(func() { t.run(ctx, n.retry, n.clock, n.log) })
	}
	n.dispatch(ctx, ch)
	wg.Wait()
	left := 0
	for _, t := range n.targets {
		left += t.queue.len()
	}
	n.client.CloseIdleConnections()
	if left > 0 {
		n.log.Info("notifications not sent: hostlet stops", "notifications", left)
	}
}

// Ready is closed once Run has subscribed to the events log: the events
// recorded from then on are notified.
func (n *Notifier) Ready() <-chan struct{} { return n.subscribed }

// dispatch hands every event of ch that a target wants to its queue,
// until ctx ends.
func (n *Notifier) dispatch(ctx context.Context, ch <-chan eventlog.Event) {
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-ch:
			if last != 0 && e.Seq > last+1 {
				missed := e.Seq - last - 1
				if n.missed.Add(missed) == missed {
					n.log.Warn("events recorded faster than notifications are queued: some were missed", "events", missed)
				}
			}
			last = e.Seq
			n.offer(e)
		}
	}
}

// offer queues e's notification on every target that wants it.
func (n *Notifier) offer(e eventlog.Event) {
	name := eventName(e.Type)
	if name == "" {
		return
	}
	var note *Notification
	for _, t := range n.targets {
		if !t.wants(name) {
			continue
		}
		if note == nil {
			rev := ""
			if n.revision != nil && e.Pod != "" {
				rev = n.revision(e.Pod)
			}
			nn := newNotification(e, name, n.host, rev)
			note = &nn
		}
		t.enqueue(*note, n.log)
	}
}

// Stats returns what every target did, in the config's order.
func (n *Notifier) Stats() []Stat {
	out := make([]Stat, 0, len(n.targets))
	for _, t := range n.targets {
		out = append(out, Stat{Target: t.name, Sent: t.sent.Load(), Failed: t.failed.Load(), Dropped: t.dropped.Load(), Queued: t.queue.len()})
	}
	return out
}

// Missed returns how many events the events log could not offer to Run
// because its subscription was full (whether a target wanted them is not
// known).
func (n *Notifier) Missed() uint64 { return n.missed.Load() }
