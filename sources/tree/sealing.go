package tree

import (
	"crypto/sha256"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/manifest/sopsfile"
)

// decodeFile decodes manifest file data (origin names it): a SOPS file
// encrypted in place (YAML or JSON) is decoded without its metadata, its
// encrypted values left as they are (ENC[...]), and carries its
// ciphertext (manifest.Sealed) for the host to decrypt when it creates a
// container; an encrypted value may only be an env value.
func decodeFile(data []byte, origin manifest.Origin) (ms []manifest.Sourced, plain string, sealed *manifest.Sealed, err error) {
	info, ok, err := sopsfile.Detect(origin.File, data)
	if err != nil {
		return nil, "its SOPS metadata cannot be read", nil, &manifest.Error{Origin: origin, Detail: "SOPS file: " + err.Error()}
	}
	plain = plainReason(info, ok, data)
	ms, sealed, err = decodeSealed(data, origin, info, ok)
	return ms, plain, sealed, err
}

// decodeSealed is decodeFile's decode of data, which Detect read as info
// (ok: a SOPS file, returned as sealed).
func decodeSealed(data []byte, origin manifest.Origin, info sopsfile.Info, ok bool) ([]manifest.Sourced, *manifest.Sealed, error) {
	switch {
	case !ok:
		ms, err := manifest.Decode(data, origin)
		return ms, nil, err
	case info.Format != sopsfile.YAML && info.Format != sopsfile.JSON:
		return nil, nil, &manifest.Error{Origin: origin, Detail: fmt.Sprintf("a manifest file encrypted as %s: encrypt a manifest in place, as YAML or JSON (sops encrypt --encrypted-regex '^(value)$')", info.Format)}
	case !info.MAC:
		return nil, nil, &manifest.Error{Origin: origin, Detail: "SOPS file without a MAC: refused, as it cannot be checked"}
	}
	plain, err := sopsfile.StripMetadata(info.Format, data)
	if err != nil {
		return nil, nil, &manifest.Error{Origin: origin, Detail: "SOPS file: " + err.Error()}
	}
	ms, err := manifest.Decode(plain, origin)
	sealed := &manifest.Sealed{File: origin.File, Format: info.Format, Data: data}
	for i := range ms {
		if ms[i].Kube != nil {
			ms[i].Kube.Sealed = true
		}
		sealValues(&ms[i], func(string) *manifest.Sealed { return sealed })
	}
	return ms, sealed, err
}

// noteKubeSealed notes the encrypted values of SOPS file sealed (nil:
// the file is no SOPS file), which ms were decoded from, when it holds
// Kubernetes objects: a pod translated from objects of the source finds
// its values' file by them (sealKube).
func (r *Reader) noteKubeSealed(ms []manifest.Sourced, sealed *manifest.Sealed) {
	if sealed == nil || !slices.ContainsFunc(ms, func(s manifest.Sourced) bool { return s.Kube != nil }) {
		return
	}
	for _, s := range ms {
		if s.Kube == nil || s.Kube.Kind != "Secret" {
			// Only a Secret's values may be encrypted (the translation
			// refuses any other).
			continue
		}
		for _, enc := range manifest.EncryptedValues(string(s.Kube.Raw)) {
			if r.kubeSealed == nil {
				r.kubeSealed = map[string]*manifest.Sealed{}
			}
			if r.kubeSealed[enc] == nil {
				// The first file holding it: a copy in another cannot
				// take it over.
				r.kubeSealed[enc] = sealed
			}
		}
	}
}

// sealKube attaches to pod p, translated from Kubernetes objects, the
// SOPS files of the source its encrypted values are of (a Secret's file),
// as decodeSealed does for a native manifest.
func (r *Reader) sealKube(p *manifest.Sourced) {
	r.sealKubeFiles(p)
	sealValues(p, func(enc string) *manifest.Sealed { return r.kubeSealed[enc] })
}

// sealKubeFiles marks the files items of pod p that are keys of a Secret
// encrypted in place (the translation left each as its encrypted value,
// a data value as a base64 part of it) with the Secret's SOPS file,
// attached to p: the host writes each key's plaintext to the secrets'
// tmpfs. An item holding anything else encrypted is left for sealValues
// to refuse.
func (r *Reader) sealKubeFiles(p *manifest.Sourced) {
	cloned := false
	for i, v := range p.Manifest.Volumes {
		if v.Files == nil {
			continue
		}
		var items []manifest.FileItem
		for j, it := range v.Files.Items {
			enc, _, ok := manifest.SealedItemValue(it.Data)
			f := r.kubeSealed[enc]
			if it.Sealed != "" || !ok || f == nil {
				continue
			}
			if items == nil {
				// Files values are shared by the pods that mount them.
				items = slices.Clone(v.Files.Items)
			}
			items[j].Sealed = f.File
			attach(p, f)
		}
		if items != nil {
			if !cloned {
				p.Manifest.Volumes, cloned = slices.Clone(p.Manifest.Volumes), true
			}
			p.Manifest.Volumes[i].Files = manifest.NewFiles(v.Files.Source, v.Files.Secret, items)
		}
	}
}

// envValueField matches the field path of an env value.
var envValueField = regexp.MustCompile(`^(containers|initContainers)\[\d+\]\.env\[\d+\]\.value$`)

// sealValues checks where s's encrypted values are: each in an env value,
// from a file of the source that fileOf finds (nil: none), which is
// attached to s (Sealed). Any other is an error of s naming its field, a
// files item that is no SOPS file of its own but holds one (a Compose
// config's content interpolated from an encrypted .env) too.
func sealValues(s *manifest.Sourced, fileOf func(enc string) *manifest.Sealed) {
	for i, v := range s.Manifest.Volumes {
		if v.Files == nil {
			continue
		}
		for j, it := range v.Files.Items {
			if it.Sealed == "" && len(manifest.EncryptedValues(string(it.Data))) > 0 {
				s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Field: fmt.Sprintf("volumes[%d].files.items[%d]", i, j),
					Detail: "an encrypted value (SOPS) in a file's content: encrypt the whole file instead"})
			}
		}
	}
	for field, value := range manifest.StringFields(s.Manifest) {
		for _, enc := range manifest.EncryptedValues(value) {
			f := fileOf(enc)
			switch {
			case !envValueField.MatchString(field):
				s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Field: field,
					Detail: "an encrypted value (SOPS) may only be an env value, or a part of one"})
			case f == nil:
				s.Errors = append(s.Errors, &manifest.Error{Origin: s.Origin, Pod: s.Manifest.ID, Field: field,
					Detail: "an encrypted value (SOPS) that is in no encrypted file of the source"})
			default:
				attach(s, f)
			}
		}
	}
}

// attach adds f to the files s's values come from, once.
func attach(s *manifest.Sourced, f *manifest.Sealed) {
	if !slices.Contains(s.Manifest.Sealed, f) {
		s.Manifest.Sealed = append(s.Manifest.Sealed, f)
	}
}

// projectSecrets are the SOPS files of a Compose project.
type projectSecrets struct {
	// byContent finds a file by the SHA-256 of its bytes as the
	// renderer was given them (the ciphertext, or a dotenv file without
	// its metadata), for the files items the renderer made of them.
	byContent map[[32]byte]*manifest.Sealed
	// byValue finds a dotenv file by one of its encrypted values.
	byValue map[string]*manifest.Sealed
	// plain says why each file is not wholly encrypted ("" when it is).
	plain map[string]string
}

// prepareSecrets finds the SOPS files of bundle b of project folder dir
// (its revision already taken) and readies them for rendering: a dotenv
// file is given to the renderer without its sops_ lines, so that an
// env_file or the .env names its values as ENC[...]; any other stays as
// it is, to be mounted. The error is a Compose file that is encrypted, or
// a SOPS file that cannot be read.
func prepareSecrets(b *project.Bundle, dir string) (*projectSecrets, error) {
	ps := &projectSecrets{byContent: map[[32]byte]*manifest.Sealed{}, byValue: map[string]*manifest.Sealed{}, plain: map[string]string{}}
	for _, name := range b.Names() {
		f := b.Files[name]
		if f.Err != "" {
			continue
		}
		info, ok, err := sopsfile.Detect(name, f.Data)
		if err == nil {
			ps.plain[path.Join(dir, name)] = plainReason(info, ok, f.Data)
		}
		switch {
		case !ok && err == nil:
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: SOPS file: %w", name, err)
		case !info.MAC:
			return nil, fmt.Errorf("%s: SOPS file without a MAC: refused, as it cannot be checked", name)
		case project.IsProjectFile(path.Base(name)) && path.Dir(name) == ".":
			return nil, fmt.Errorf("%s: a Compose file cannot be encrypted; encrypt its .env, env_file, secrets and configs instead", name)
		}
		sealed := &manifest.Sealed{File: path.Join(dir, name), Format: info.Format, Data: f.Data}
		ps.byContent[sha256.Sum256(f.Data)] = sealed
		if info.Format != sopsfile.Dotenv {
			continue
		}
		stripped, err := sopsfile.StripMetadata(info.Format, f.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, enc := range manifest.EncryptedValues(string(stripped)) {
			ps.byValue[enc] = sealed
		}
		ps.byContent[sha256.Sum256(stripped)] = sealed
		f.Data = stripped
		b.Files[name] = f
	}
	return ps, nil
}

// seal marks what the renderer made of the project's SOPS files in s: a
// files item holding one (a secret, config or bind-mounted file) becomes
// that file, marked, its ciphertext whole; env values holding a dotenv
// file's encrypted values carry that file. Encrypted values anywhere else
// are errors of s.
func (ps *projectSecrets) seal(s *manifest.Sourced) {
	if len(ps.byContent) == 0 {
		return
	}
	for i, v := range s.Manifest.Volumes {
		if v.Files == nil {
			continue
		}
		items, changed := slices.Clone(v.Files.Items), false
		for j, it := range items {
			if f := ps.byContent[sha256.Sum256(it.Data)]; f != nil {
				items[j].Data, items[j].Sealed, changed = f.Data, f.File, true
				attach(s, f)
			}
		}
		if changed {
			s.Manifest.Volumes = slices.Clone(s.Manifest.Volumes)
			s.Manifest.Volumes[i].Files = manifest.NewFiles(v.Files.Source, v.Files.Secret, items)
		}
	}
	sealValues(s, func(enc string) *manifest.Sealed { return ps.byValue[enc] })
}

// plainReason says why a file Detect read as info (ok: a SOPS file) is
// not wholly encrypted with SOPS, "" when it is.
func plainReason(info sopsfile.Info, ok bool, data []byte) string {
	switch {
	case !ok:
		return "not encrypted with SOPS"
	case !info.MAC:
		return "SOPS metadata without a MAC"
	}
	if sopsfile.NoValueEncrypted(info.Format, data) {
		return "no value is encrypted"
	}
	if names := sopsfile.Unencrypted(info.Format, data); len(names) > 0 {
		if len(names) > 5 {
			names = append(names[:5], "...")
		}
		return fmt.Sprintf("encrypted in part: %s in plain text", strings.Join(names, ", "))
	}
	return ""
}

// notePlain records in r that file name is not wholly encrypted (why).
func (r *Reader) notePlain(name, why string) {
	if why == "" {
		return
	}
	if r.plain == nil {
		r.plain = map[string]string{}
	}
	r.plain[name] = why
}
