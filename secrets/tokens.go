package secrets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/manifest"
)

// MAC is the host's keyed hash of a plaintext, the 32 hex digits a token
// carries (podspec.EnvHasher.SecretMAC): it changes with the plaintext
// and with nothing else.
type MAC func(plain []byte) string

// ErrNoKeys is the error of a pod with secrets on a host without keys.
var ErrNoKeys = errors.New("this host has no key to decrypt with (secrets.ageKeyFile, secrets.sshKeyFile)")

// opened is what a manifest's sealed files decrypt to: the plaintext of
// each encrypted value by its ciphertext (and the file it is of), and of
// each whole file by its name.
type opened struct {
	values    map[string]string
	valueFile map[string]string
	files     map[string][]byte
}

// open decrypts sealed (d nil: a host without keys), naming them in source
// in errors: "cannot decrypt apps:shop/.env: ...".
func (d *Decrypter) open(ctx context.Context, source string, sealed []*manifest.Sealed) (opened, error) {
	if len(sealed) == 0 {
		return opened{}, nil
	}
	if d == nil {
		return opened{}, fmt.Errorf("cannot decrypt %s:%s: %w", source, sealed[0].File, ErrNoKeys)
	}
	files := make([]File, len(sealed))
	for i, f := range sealed {
		files[i] = File{Name: source + ":" + f.File, Format: f.Format, Data: f.Data}
	}
	plain, errs := d.Decrypt(ctx, files)
	o := opened{values: map[string]string{}, valueFile: map[string]string{}, files: map[string][]byte{}}
	for i, f := range sealed {
		if errs[i] != nil {
			return opened{}, errs[i]
		}
		o.files[f.File] = plain[i].Data
		for enc, v := range plain[i].Values {
			o.values[enc], o.valueFile[enc] = v, f.File
		}
	}
	return o, nil
}

// Tokenize makes the manifests of ms that carry encrypted files fit for
// the host: every encrypted value (ENC[...]) of an env value becomes the
// token of its plaintext (manifest.SecretToken of mac), and every sealed
// files item's data the token of its file's plaintext; the ciphertext
// stays in Sealed. No plaintext is kept in a manifest, and a file only
// encrypted again gives the same tokens. A manifest whose files this host
// cannot decrypt (d nil: it has no keys), or whose values are not in
// them, keeps its values and gets the error: validation then turns it
// down, and its last accepted version stays; failed reports whether any
// did. ms is changed in place; every manifest changed is a copy.
func Tokenize(ctx context.Context, d *Decrypter, ms []manifest.Sourced, mac MAC) (failed bool) {
	for i := range ms {
		s := &ms[i]
		if !s.Manifest.HasSecrets() {
			continue
		}
		o, err := d.open(ctx, s.Origin.Source, s.Manifest.Sealed)
		if err == nil {
			var m manifest.Manifest
			if m, err = tokenized(s.Manifest, o, mac); err == nil {
				s.Manifest = m
				continue
			}
		}
		s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Detail: "secret: " + err.Error()})
		failed = true
	}
	return failed
}

// tokenized is m with its encrypted values and sealed items as tokens.
func tokenized(m manifest.Manifest, o opened, mac MAC) (manifest.Manifest, error) {
	m = m.Clone()
	for i, c := range m.Containers {
		for j, e := range c.Env {
			for _, enc := range manifest.EncryptedValues(e.Value) {
				plain, ok := o.values[enc]
				if !ok {
					return manifest.Manifest{}, fmt.Errorf("container %s: env %s holds an encrypted value that is in none of the pod's encrypted files", c.Name, e.Name)
				}
				e.Value = strings.Replace(e.Value, enc, manifest.SecretToken(o.valueFile[enc], mac([]byte(plain))), 1)
			}
			m.Containers[i].Env[j] = e
		}
	}
	for i, v := range m.Volumes {
		if v.Files == nil || !slices.ContainsFunc(v.Files.Items, func(it manifest.FileItem) bool { return it.Sealed != "" }) {
			continue
		}
		items := slices.Clone(v.Files.Items)
		for j, it := range items {
			if it.Sealed == "" {
				continue
			}
			plain, ok := o.files[it.Sealed]
			if !ok {
				return manifest.Manifest{}, fmt.Errorf("volume %s: %s is none of the pod's encrypted files", v.Name, it.Sealed)
			}
			items[j].Data = []byte(manifest.SecretToken(it.Sealed, mac(plain)))
		}
		m.Volumes[i].Files = manifest.NewFiles(v.Files.Source, v.Files.Secret, items)
	}
	return m, nil
}

// Reveal returns, for a pod's sealed files, the plaintext each token of
// mac stands for: every encrypted value's and every whole file's. The
// error names the file that could not be decrypted ("cannot decrypt
// apps:shop/.env: no matching age identity ...").
func Reveal(ctx context.Context, d *Decrypter, source string, sealed []*manifest.Sealed, mac MAC) (map[string][]byte, error) {
	o, err := d.open(ctx, source, sealed)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(o.values)+len(o.files))
	for enc, v := range o.values {
		out[manifest.SecretToken(o.valueFile[enc], mac([]byte(v)))] = []byte(v)
	}
	for name, f := range o.files {
		out[manifest.SecretToken(name, mac(f))] = f
	}
	return out, nil
}
