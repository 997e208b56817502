// Package client asks a hostlet's own HTTP API (package api) what the
// CLI needs of it: the status document (GET /status), holds (POST and
// DELETE /pods/{id}/hold) and a sync now (POST /sync). A Client is one
// API address and, optionally, its bearer token; each method takes a
// context first, returns the API's typed answer, and says in its error
// what failed on which URL (the API's own message when it refused).
//
// Cost: one HTTP request per call, bounded by RequestTimeout; an answer is
// read up to a bound (the status document up to manifest.MaxSize, any
// other answer up to 64 KiB).
package client
