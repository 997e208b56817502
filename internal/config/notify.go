package config

import (
	"fmt"
	"slices"
	"strings"
)

// Notification event names, the values of notify[].events.
const (
	NotifyRollback    = "rollback"
	NotifyFailed      = "failed"
	NotifySourceError = "source-error"
	NotifyRejected    = "rejected"
	NotifyRecovered   = "recovered"
)

// NotifyEvents returns every notification event name, in the order the
// docs list them.
func NotifyEvents() []string {
	return []string{NotifyRollback, NotifyFailed, NotifySourceError, NotifyRejected, NotifyRecovered}
}

// Notify is one notification target (notify[i]). Exactly one of URL and
// URLFile is set; the URL itself (its scheme, the files it names) is
// checked when the notifier is built at start (internal/notify), because
// chat URLs are known only to the chat library and a URL file is read
// only then.
type Notify struct {
	// Name names the target in logs and metrics; optional, "notify[i]"
	// when unset.
	Name string `mapstructure:"name"`
	// URL is an http(s) URL (the JSON webhook) or a chat service's URL
	// (slack://, discord://, telegram://, smtp://, ...). It may carry
	// tokens: it is never logged.
	URL string `mapstructure:"url"`
	// URLFile holds the URL instead of URL (read at start, trimmed).
	URLFile string `mapstructure:"urlFile"`
	// SecretFile holds the webhook's HMAC-SHA256 key (trimmed); optional,
	// webhook only.
	SecretFile string `mapstructure:"secretFile"`
	// Events are the event names sent (NotifyEvents); empty: all.
	Events []string `mapstructure:"events"`
}

// checkNotify checks notify[] and names the unnamed targets notify[i].
func (c *Config) checkNotify(bad badFunc) {
	seen := map[string]int{}
	known := NotifyEvents()
	for i := range c.Notify {
		n := &c.Notify[i]
		key := func(f string) string { return fmt.Sprintf("notify[%d].%s", i, f) }
		switch {
		case n.Name == "":
			n.Name = fmt.Sprintf("notify[%d]", i)
		case !sourceNameRE.MatchString(n.Name):
			bad(key("name"), "%q must be lowercase letters, digits and '-'", n.Name)
		}
		if j, dup := seen[n.Name]; dup {
			bad(key("name"), "duplicate target name %q (also notify[%d])", n.Name, j)
		}
		seen[n.Name] = i
		switch {
		case n.URL != "" && n.URLFile != "":
			bad(key("url"), "set url or urlFile, not both")
		case strings.TrimSpace(n.URL) == "" && n.URLFile == "":
			bad(key("url"), "required (or urlFile)")
		}
		for j, e := range n.Events {
			if !slices.Contains(known, e) {
				bad(key(fmt.Sprintf("events[%d]", j)), "%q is not one of %s", e, strings.Join(known, ", "))
			}
		}
	}
}
