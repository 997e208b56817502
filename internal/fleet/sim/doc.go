// Package sim holds the fleet simulation (docs/scale.md): N in-process
// agents, each with its own etcd client, published source, merger and
// Syncer on the fake engine, watching one etcd; a publish writes every
// host's set and the test measures how long each agent takes to run it.
// It is a test behind the fleetsim build tag (make bench-fleet), so make
// test never runs it.
package sim
