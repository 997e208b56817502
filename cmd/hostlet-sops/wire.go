package main

// The request and the answer, as JSON ([]byte as base64). hostlet's
// secrets package holds the same types; a test there runs this program.

// Request is what hostlet asks.
type Request struct {
	// Identities are the texts of age identity files: one identity a
	// line, "#" comments. Plugin identities are refused (they would run a
	// program).
	Identities []string `json:"identities,omitempty"`
	// SSHKeys are OpenSSH private keys (ssh-ed25519, ssh-rsa) used as
	// age identities, as sops does; none may have a passphrase.
	SSHKeys [][]byte `json:"sshKeys,omitempty"`
	// Files are the files to decrypt, in their order in the answer.
	Files []File `json:"files"`
}

// File is one encrypted file and its format: yaml, json, dotenv, ini or
// binary, as sops names them.
type File struct {
	Format string `json:"format"`
	Data   []byte `json:"data"`
}

// Answer holds one result a file of the request, in its order.
type Answer struct {
	Files []Result `json:"files"`
}

// Result is one file's plaintext, or Kind and Error saying why there is
// none. Error never holds a value of the file.
type Result struct {
	Plaintext []byte `json:"plaintext,omitempty"`
	// Values maps each encrypted value of a YAML, JSON, dotenv or INI
	// file, as the file holds it (ENC[AES256_GCM,...]), to its plaintext
	// (numbers and booleans as text): how hostlet finds the value of an
	// encrypted env value or files item of a manifest.
	Values map[string]string `json:"values,omitempty"`
	Kind   string            `json:"kind,omitempty"`
	Error  string            `json:"error,omitempty"`
}

// The kinds of a result's error.
const (
	// KindNoKey: no identity of the request decrypts the file's data key.
	KindNoKey = "no-key"
	// KindIntegrity: the file was changed after it was encrypted (its
	// MAC or a value's authentication tag does not match).
	KindIntegrity = "integrity"
	// KindFormat: the file is not a SOPS file of its format.
	KindFormat = "format"
)
