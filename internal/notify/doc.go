// Package notify sends hostlet's notable events to the targets of the host
// config's notify: list: rollback, failed (also pull-failed and
// build-failed), source-error, rejected and recovered, each target
// filtered by its events. An http(s) target gets a JSON body (optionally
// signed with HMAC-SHA256 in X-Hostlet-Signature-256); any other scheme is
// a chat service sent a short text through the shoutrrr library, which
// runs in a helper process, cmd/hostlet-notify, never in hostlet: New
// finds the helper (Options.Helper, else beside the running executable,
// else on PATH) and has it check each chat URL once; each attempt to send
// runs it again, the URL and the text on its stdin (never in its argv or
// environment, which /proc shows), and kills it when the attempt's time
// is up. The protocol is in chatwire.
//
// Run subscribes to the events log and hands each notification to every
// target's bounded queue without waiting: recording an event never blocks,
// and a target that is down slows nothing else. One goroutine per target
// sends in order, retrying with exponential backoff, and gives up
// (counted as failed) after a few attempts; when a queue is full its
// oldest notification is dropped (counted). When its context ends, Run
// returns once every send has ended (a chat helper still running is
// killed). Nothing else is in a payload than the event's own fields
// (their messages are scrubbed of env values by whoever recorded them),
// the host name and the pod's revision; a URL, which may carry tokens, is
// never logged: targets are named by name and by scheme (and, for a
// webhook, host).
//
// Cost: nothing without targets. With targets, one goroutine per target
// plus one reading the events, a queue of QueueSize notifications per
// target, and one HTTP request per notification and attempt; a chat
// attempt also starts the helper (an 8.9 MB static binary, ~4 ms and
// ~14 MiB of peak RSS for a check, for as long as it runs). Keeping
// shoutrrr in the helper made the agent's binary 0.78 MB smaller and an
// idle agent's RSS ~1 MiB smaller (docs/updates.md, "Cost").
package notify
