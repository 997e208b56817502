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
		o.add(f.File, plain[i])
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
	opened := openAll(ctx, d, ms)
	for i := range ms {
		s := &ms[i]
		if !s.Manifest.HasSecrets() {
			continue
		}
		o, err := opened(s.Origin.Source, s.Manifest.Sealed)
		if err == nil {
			var m manifest.Manifest
			if m, err = tokenized(s.Manifest, o, mac); err == nil {
				s.Manifest = m
				continue
			}
		}
		e := &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Detail: "secret: " + err.Error()}
		if fe := (*fieldError)(nil); errors.As(err, &fe) {
			e.Field = s.Field(fe.field)
		}
		s.Errors = append(s.Errors, e)
		failed = true
	}
	return failed
}

// openAll decrypts every encrypted file of ms in one batch (one run of
// the helper for a whole update, however many manifests share or hold
// files) and returns what a manifest's files decrypt to.
func openAll(ctx context.Context, d *Decrypter, ms []manifest.Sourced) func(source string, sealed []*manifest.Sealed) (opened, error) {
	type key struct{ source, file, data string }
	var batch []File
	seen := map[key]int{}
	for _, s := range ms {
		for _, f := range s.Manifest.Sealed {
			k := key{s.Origin.Source, f.File, string(f.Data)}
			if _, ok := seen[k]; !ok && d != nil {
				seen[k] = len(batch)
				batch = append(batch, File{Name: s.Origin.Source + ":" + f.File, Format: f.Format, Data: f.Data})
			}
		}
	}
	var plain []Plain
	var errs []error
	if len(batch) > 0 {
		plain, errs = d.Decrypt(ctx, batch)
	}
	return func(source string, sealed []*manifest.Sealed) (opened, error) {
		if d == nil && len(sealed) > 0 {
			return opened{}, fmt.Errorf("cannot decrypt %s:%s: %w", source, sealed[0].File, ErrNoKeys)
		}
		o := opened{values: map[string]string{}, valueFile: map[string]string{}, files: map[string][]byte{}}
		for _, f := range sealed {
			i := seen[key{source, f.File, string(f.Data)}]
			if errs[i] != nil {
				return opened{}, errs[i]
			}
			o.add(f.File, plain[i])
		}
		return o, nil
	}
}

// add takes file's plaintext into o.
func (o opened) add(file string, p Plain) {
	o.files[file] = p.Data
	for enc, v := range p.Values {
		o.values[enc], o.valueFile[enc] = v, file
	}
}

// tokenized is m with its encrypted values and sealed items as tokens.
func tokenized(m manifest.Manifest, o opened, mac MAC) (manifest.Manifest, error) {
	for _, f := range m.Sealed {
		if strings.ContainsAny(f.File, "{}") {
			return manifest.Manifest{}, fmt.Errorf("%s: a file name with { or } cannot stand in a token: rename it", f.File)
		}
	}
	m = m.Clone()
	for _, cs := range [][]manifest.Container{m.Containers, m.InitContainers} {
		if err := tokenizeEnv(cs, o, mac); err != nil {
			return manifest.Manifest{}, err
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
			data, err := tokenizedItem(it, o, mac)
			if err != nil {
				return manifest.Manifest{}, &fieldError{field: fmt.Sprintf("volumes[%d]", i), err: fmt.Errorf("volume %s: %s: %w", v.Name, v.Files.Source, err)}
			}
			items[j].Data = data
		}
		m.Volumes[i].Files = manifest.NewFiles(v.Files.Source, v.Files.Secret, items)
	}
	return m, nil
}

// tokenizedItem is the data of sealed files item it as a token: of its
// file's plaintext, or of its encrypted value's (a Kubernetes Secret's
// key), whose base64 part must decode — checked now, while the running
// version is still there.
func tokenizedItem(it manifest.FileItem, o opened, mac MAC) ([]byte, error) {
	enc, decode, isValue := manifest.SealedItemValue(it.Data)
	if !isValue {
		plain, ok := o.files[it.Sealed]
		if !ok {
			return nil, fmt.Errorf("%s is none of the pod's encrypted files", it.Sealed)
		}
		return []byte(manifest.SecretToken(it.Sealed, mac(plain))), nil
	}
	plain, ok := o.values[enc]
	if !ok || o.valueFile[enc] != it.Sealed {
		return nil, fmt.Errorf("file %s: an encrypted value that is not in %s", itemName(it), it.Sealed)
	}
	if decode {
		if _, err := manifest.DecodeBase64(plain); err != nil {
			return nil, fmt.Errorf("file %s: its value in %s: %w", itemName(it), it.Sealed, err)
		}
	}
	return manifest.SealedItemData(manifest.SecretToken(it.Sealed, mac([]byte(plain))), decode), nil
}

// fieldError is an error of a manifest's field (its path in the
// manifest, as Sourced.Field takes it).
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

// itemName names a files item in errors: its path, or "(the file)" for
// a volume of one file.
func itemName(it manifest.FileItem) string {
	if it.Path == "" {
		return "(the file)"
	}
	return it.Path
}

// tokenizeEnv replaces, in place, the encrypted values of cs's env
// values by tokens (cs is the caller's copy).
func tokenizeEnv(cs []manifest.Container, o opened, mac MAC) error {
	for i, c := range cs {
		for j, e := range c.Env {
			encs := manifest.EncryptedValues(e.Value)
			revealed := e.Value
			for _, enc := range encs {
				plain, ok := o.values[enc]
				if !ok {
					return fmt.Errorf("container %s: env %s holds an encrypted value that is in none of the pod's encrypted files", c.Name, e.Name)
				}
				e.Value = strings.Replace(e.Value, enc, manifest.SecretToken(o.valueFile[enc], mac([]byte(plain))), 1)
				revealed = strings.Replace(revealed, enc, plain, 1)
			}
			if len(encs) > 0 {
				// What the container will get, checked now, while the
				// running version is still there: the engine would refuse
				// a NUL byte (quoting the value), and a base64 part (a
				// Kubernetes Secret's data) must decode.
				decoded, err := manifest.DecodeBase64Parts(revealed)
				switch {
				case err != nil:
					return fmt.Errorf("container %s: env %s: %w", c.Name, e.Name, err)
				case strings.ContainsRune(decoded, 0):
					return fmt.Errorf("container %s: env %s: its secret holds a NUL byte, which no environment variable can", c.Name, e.Name)
				}
			}
			cs[i].Env[j] = e
		}
	}
	return nil
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
