package secrets

// The helper's request and answer, as JSON ([]byte as base64): the same
// types as cmd/hostlet-sops's wire.go (a module of its own, which cannot
// import this one); TestHelperSpeaksTheWire runs the helper on them.

type wireRequest struct {
	Identities []string   `json:"identities,omitempty"`
	SSHKeys    [][]byte   `json:"sshKeys,omitempty"`
	Files      []wireFile `json:"files"`
}

type wireFile struct {
	Format string `json:"format"`
	Data   []byte `json:"data"`
}

type wireAnswer struct {
	Files []wireResult `json:"files"`
}

type wireResult struct {
	Plaintext []byte            `json:"plaintext,omitempty"`
	Values    map[string]string `json:"values,omitempty"`
	Kind      string            `json:"kind,omitempty"`
	Error     string            `json:"error,omitempty"`
}
