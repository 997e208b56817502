// Package runtime is hostlet's view of the container engine: the containers
// it manages (found by label, never by name), and the few operations the
// reconciler needs. Docker is the implementation, through the Docker Engine
// API with version negotiation so old (1.41) and new engines both work.
//
// Import it as hruntime where the standard library's runtime is also needed.
package runtime
