// Package secrets decrypts the SOPS files of hostlet's sources with the
// host's keys (docs/secrets.md). The keys are read once, from files that
// only hostlet's user may read; decryption runs in the hostlet-sops
// helper (which links getsops/sops and its cloud clients, so that hostlet
// does not), the keys and the ciphertext on its standard input, the
// plaintext on its standard output, nothing on disk. Plaintext is kept in
// memory only, in a bounded cache keyed by the ciphertext; files a
// container mounts go to a tmpfs (RuntimeDir).
package secrets
