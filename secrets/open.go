package secrets

import (
	"context"
	"fmt"
)

// Config is the host's secrets settings (config's secrets block).
type Config struct {
	AgeKeyFile string
	SSHKeyFile string
	RuntimeDir string
	// Helper is hostlet-sops's path; "" finds it beside hostlet, else on
	// PATH.
	Helper string
}

// Open loads the host's keys, checks that the helper parses them and
// prepares the runtime folder, or says why hostlet must not start. A host
// without keys gets nil: it decrypts nothing, and a pod that needs a
// secret fails with that reason.
func Open(ctx context.Context, c Config) (*Decrypter, error) {
	if c.AgeKeyFile == "" && c.SSHKeyFile == "" {
		return nil, nil
	}
	keys, err := LoadKeys(c.AgeKeyFile, c.SSHKeyFile)
	if err != nil {
		return nil, err
	}
	// Each file on its own, so that an error names the one at fault.
	for _, one := range []struct {
		key, path string
		keys      Keys
	}{
		{"secrets.ageKeyFile", c.AgeKeyFile, Keys{identities: keys.identities}},
		{"secrets.sshKeyFile", c.SSHKeyFile, Keys{sshKeys: keys.sshKeys}},
	} {
		if one.path == "" {
			continue
		}
		if err := NewDecrypter(c.Helper, one.keys).CheckKeys(ctx); err != nil {
			return nil, fmt.Errorf("%s %s: %w", one.key, one.path, err)
		}
	}
	if err := PrepareRuntimeDir(c.RuntimeDir); err != nil {
		return nil, err
	}
	return NewDecrypter(c.Helper, keys), nil
}
