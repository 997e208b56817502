package notify

import (
	"fmt"
	"strings"
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/eventlog"
)

// eventName is the notification event name of an events type, "" for the
// types never sent.
func eventName(typ string) string {
	switch typ {
	case eventlog.Rollback:
		return config.NotifyRollback
	case eventlog.Failed, eventlog.PullFailed, eventlog.BuildFailed:
		return config.NotifyFailed
	case eventlog.SourceError:
		return config.NotifySourceError
	case eventlog.Rejected:
		return config.NotifyRejected
	case eventlog.Recovered:
		return config.NotifyRecovered
	}
	return ""
}

// Notification is what a target is sent; a webhook gets it as its JSON
// body, with the keys in this order.
type Notification struct {
	Host string `json:"host"`
	Pod  string `json:"pod"`
	// Event is the notification event name (config.NotifyEvents), Type
	// the event's own type ("pull-failed" for the event "failed").
	Event    string `json:"event"`
	Type     string `json:"type"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
	Revision string `json:"revision"`
	// Time is when the event was recorded, RFC 3339 in UTC.
	Time string `json:"time"`
}

// newNotification builds the notification of e, of event name name.
func newNotification(e eventlog.Event, name, host, revision string) Notification {
	return Notification{
		Host: host, Pod: e.Pod, Event: name, Type: e.Type, Reason: e.Reason, Message: e.Message,
		Revision: revision, Time: e.Time.UTC().Format(time.RFC3339),
	}
}

// Text is the notification as a chat message: a first line
// "hostlet <host>: <event> <pod>: <reason> (<revision>)", the revision cut
// to 12 characters, then the message.
func (n Notification) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hostlet %s: %s", n.Host, n.Event)
	if n.Pod != "" {
		b.WriteString(" " + n.Pod)
	}
	if n.Reason != "" {
		b.WriteString(": " + n.Reason)
	}
	if r := shortRevision(n.Revision); r != "" {
		b.WriteString(" (" + r + ")")
	}
	if n.Message != "" {
		b.WriteString("\n" + n.Message)
	}
	return b.String()
}

// shortRevision is rev without an algorithm prefix ("sha256:"), cut to 12
// characters: a git commit's short hash.
func shortRevision(rev string) string {
	if i := strings.LastIndexByte(rev, ':'); i >= 0 {
		rev = rev[i+1:]
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev
}
