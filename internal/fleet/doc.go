// Package fleet holds what a fleet of hosts shares through etcd: label
// selectors (`role=canary,zone=a`, or `*`), the published set `hostlet
// publish` writes for each host's `via: etcd` git source and the keys it
// lives under, the fleet view read from the hosts' status keys
// (`hostlet fleet status`), and the read-only fleet web page (`hostlet
// fleet serve`).
package fleet
