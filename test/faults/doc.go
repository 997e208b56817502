// Package faults is hostlet's fault suite (`make faults`, docs/reliability.md,
// "Fault suite"). It runs the hostlet binary as a real subprocess against a
// real Docker engine, a git smart-HTTP server, an HTTP source, an embedded
// etcd, a file source and the push source, injects faults at random points
// (a seeded PRNG: -seed reproduces a run) and checks after each one that
// hostlet converges again with no pod lost, no duplicate container and no
// orphan:
//
//	go test -tags faults -v -count=1 -timeout 30m ./test/faults -args -hostlet bin/hostlet [-seed N] [-reps 3] [-classes a,b]
//
// The engine is a dockerd of its own, started by the suite with its data,
// socket and containerd in the run's temporary folder (no bridge, no
// iptables rules), so restarting it, stopping it for a simulated reboot or
// filling its host's disk never touches the containers of anyone else on
// the machine. hostlet's stateDir is a small tmpfs mounted for the run.
// Root is needed (dockerd, mount). Everything the run makes is removed at
// the end, also when it fails.
//
// The tests carry the build tag "faults", so `go test ./...` does not run
// them: they take minutes and restart engines.
package faults
