// Package compose reads a Docker Compose project (compose.yaml and its
// override, the project's .env, env_files) with compose-go and translates
// each service into a hostlet pod manifest.
//
// Nothing is read from disk but through the Files the caller gives: the
// project's files at one revision of its source (a folder, a git commit, an
// HTTP body). Interpolation reads the project's .env and the host's
// compose.env, never hostlet's own environment, and a variable with neither
// a value nor a default is an error naming it. Every Compose key is either
// applied or refused by name: a project using a key hostlet does not apply
// is an error, never a partial deployment.
package compose
