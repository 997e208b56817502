// Package gitsource is the git source: manifests at `path`/`paths` inside a
// repository at `ref` (a branch, a tag or a full commit SHA), fetched with
// go-git into a bare cache under stateDir/git/<source name> that is reused
// across restarts. A poll that finds the same commit costs one ls-remote
// round trip and does no other work. Each poll is bounded by the source's
// timeout (default 30s). Polls are `interval` ±10% apart (jitter, so that
// hosts started together do not poll in lockstep); after failures to
// reach the remote the wait doubles, from the interval up to max(5 min,
// 10 × interval), until a poll succeeds; POST /sync polls at once. A cache found damaged (a truncated pack, a
// half-written folder) is removed and cloned again. With
// verify.keyringFile set, the commit must carry a valid OpenPGP signature
// from a key in the keyring. A commit's tree is read by the one manifest
// tree reader (package sources/tree), as an fs.FS (ReadCommit).
package gitsource
