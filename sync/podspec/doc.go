// Package podspec translates a desired pod into the engine's container
// specs: the infra and app containers' specs and labels (Infra, App), the
// io.hostlet.spec label that records a container's spec with its env
// values hidden (Summarize, ParseSummary) and the reasons read from it
// when the spec changes (RecreateReasons), the host paths and files
// volumes bound right before a create, and the keyed hash (EnvHasher,
// env-hash.key) that hides env values, file contents and build inputs in
// labels, status and reasons. It is pure apart from the key file: no
// engine, no clock, no lock. Package sync plans and applies with it.
package podspec
