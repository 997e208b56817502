// Package gittest holds helpers for tests of the git source against real
// git repositories and servers on this machine.
//
// NewRepo makes a bare repository in t.TempDir() and a working clone of it;
// the Repo methods write and delete files, commit (with a fixed author and
// committer, through the git CLI with GIT_CONFIG_NOSYSTEM=1 and HOME in a
// temporary folder so no user or system config leaks in), push, force-push
// to an older commit, tag and delete branches. CommitSigned signs a commit
// with an OpenPGP key made by NewKey (go-git signs it: no gpg is needed);
// WriteKeyring writes the armored public keys a verifier trusts. Import
// appends a long history quickly with git fast-import.
//
// Serve serves every bare repository under a folder over smart HTTP on
// 127.0.0.1 (git http-backend through net/http/cgi) behind basic auth, and
// counts the requests it answers, so a test can prove how much work a poll
// did. Stop and Start take the server down and bring it back on the same
// address.
package gittest
