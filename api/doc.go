// Package api serves hostlet's HTTP API: /healthz, /status (the status
// document), /events, and the POST endpoints that need the bearer token.
package api
