// Package notify sends hostlet's notable events to the targets of the host
// config's notify: list: rollback, failed (also pull-failed and
// build-failed), source-error, rejected and recovered, each target
// filtered by its events. An http(s) target gets a JSON body (optionally
// signed with HMAC-SHA256 in X-Hostlet-Signature-256); any other scheme is
// a chat service sent a short text through the shoutrrr library.
//
// Run subscribes to the events log and hands each notification to every
// target's bounded queue without waiting: recording an event never blocks,
// and a target that is down slows nothing else. One goroutine per target
// sends in order, retrying with exponential backoff, and gives up
// (counted as failed) after a few attempts; when a queue is full its
// oldest notification is dropped (counted). Nothing else is in a payload
// than the event's own fields (their messages are scrubbed of env values by
// whoever recorded them), the host name and the pod's revision; a URL,
// which may carry tokens, is never logged: targets are named by name and
// by scheme (and, for a webhook, host).
//
// Cost: nothing without targets. With targets, one goroutine per target
// plus one reading the events, a queue of QueueSize notifications per
// target, and one HTTP request per notification and attempt. The chat
// library (shoutrrr) adds about 0.8 MB to the binary and 0.6 MB to an
// idle hostlet's RSS, whether targets are configured or not.
package notify
