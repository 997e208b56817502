package sync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// SecretRevealer returns, for the encrypted files of a pod of source, the
// plaintext each token of its manifest stands for (secrets.Reveal with the
// host's keys and EnvHasher.SecretMAC); the error names the file that
// could not be decrypted. Plaintext lives in memory only: it goes into
// the engine's container config and the secret files' tmpfs, nowhere
// else.
type SecretRevealer func(ctx context.Context, source string, sealed []*manifest.Sealed) (map[string][]byte, error)

// ReasonSecret: an encrypted file a pod's containers need could not be
// decrypted (no key of this host opens it, or it was changed after it was
// encrypted); what runs keeps running.
const ReasonSecret = "SecretNotDecrypted"

// errStepSecrets is the step of decrypting a pod's secrets.
var errStepSecrets = errors.New("secret")

// revealSecrets decrypts the pod's encrypted files whenever the pod is
// applied (a plan that only restarts its containers writes its decrypted
// files again too: a reboot empties the tmpfs), before anything else is
// done: a file this host cannot open stops nothing. It costs a lookup in
// the decrypter's cache when the ciphertext was seen before.
func (ap *podApplication) revealSecrets(ctx context.Context) error {
	if !ap.m.HasSecrets() {
		return nil
	}
	if ap.opts.Secrets == nil {
		return fmt.Errorf("secret: pod %s has encrypted files and this hostlet decrypts none", ap.m.ID)
	}
	plain, err := ap.opts.Secrets(ctx, ap.pod.Source, ap.m.Sealed)
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	ap.secrets = plain
	return nil
}

// revealEnv puts into spec's env the plaintext of each token of its
// values, and decodes the base64 parts of a value that held one (a
// Kubernetes Secret's encrypted data); a token of no decrypted value is
// an error.
func (ap *podApplication) revealEnv(spec *hruntime.ContainerSpec) error {
	for i, kv := range spec.Env {
		name, _, _ := strings.Cut(kv, "=")
		toks := manifest.SecretTokens(kv)
		for _, tok := range toks {
			plain, ok := ap.secrets[tok]
			if !ok {
				return fmt.Errorf("env %s: a secret of none of the pod's encrypted files (they were not decrypted, or hold another value)", name)
			}
			kv = strings.Replace(kv, tok, string(plain), 1)
		}
		if len(toks) > 0 {
			decoded, err := manifest.DecodeBase64Parts(kv)
			switch {
			case err != nil:
				return fmt.Errorf("env %s: %w", name, err)
			case strings.ContainsRune(decoded, 0):
				return fmt.Errorf("env %s: its secret holds a NUL byte, which no environment variable can", name)
			}
			kv = decoded
		}
		spec.Env[i] = kv
	}
	return nil
}

// revealedFiles is f with each sealed item's plaintext in place of its
// token (a Kubernetes Secret's data value decoded from base64), and
// whether it has any (then it is written to the secrets' tmpfs).
func (ap *podApplication) revealedFiles(f *manifest.Files) (*manifest.Files, bool, error) {
	if !slices.ContainsFunc(f.Items, func(it manifest.FileItem) bool { return it.Sealed != "" }) {
		return f, false, nil
	}
	items := slices.Clone(f.Items)
	for i, it := range items {
		if it.Sealed == "" {
			continue
		}
		tok, decode, _ := manifest.SealedItemToken(it.Data)
		plain, ok := ap.secrets[tok]
		if !ok {
			return nil, true, fmt.Errorf("files %s: %s was not decrypted", f.Source, it.Sealed)
		}
		if decode {
			var err error
			if plain, err = manifest.DecodeBase64(string(plain)); err != nil {
				return nil, true, fmt.Errorf("files %s: %s: %w", f.Source, it.Path, err)
			}
		}
		items[i].Data = plain
	}
	return manifest.NewFiles(f.Source, f.Secret, items), true, nil
}

// revealedValues are the plaintexts of the pod's secrets, for an error
// never to show.
func (ap *podApplication) revealedValues() []string {
	out := make([]string, 0, len(ap.secrets))
	for _, v := range ap.secrets {
		out = append(out, string(v))
		// A Kubernetes Secret's data value is base64: what the
		// container gets is its decoded form.
		if decoded, err := manifest.DecodeBase64(string(v)); err == nil && len(decoded) > 0 {
			out = append(out, string(decoded))
		}
	}
	return out
}
