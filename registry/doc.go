// Package registry reads container registries for `hostlet images`:
// tag listings (paginated, capped) and digests (by HEAD), through
// go-containerregistry with the Docker config's credentials and
// credential helpers. One Client serves one run: it lists each
// repository once however many images name it, honours 429 and
// Retry-After with backoff, spends at most a budget of requests per
// registry, and bounds every answer's size.
package registry
