package kube

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/hostlet/hostlet/manifest"
)

// sealedSecret takes the SOPS-encrypted values (ENC[...], Flux style:
// sops --encrypted-regex '^(data|stringData)$') out of a Secret's JSON
// raw: those of data, base64 under the encryption, become "" in the JSON
// returned and are returned by key (dataOf puts them back as
// manifest.Base64Part); those of stringData stay where they are. Each
// must be a whole value; an encrypted value anywhere else is an error,
// with the field it is in.
func sealedSecret(raw []byte) (clean []byte, sealed map[string]string, field string, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, nil, "", fmt.Errorf("%s", typeError(err))
	}
	// Read into maps, the strict decoding that follows cannot see a key
	// given twice any more.
	for _, obj := range []struct {
		field string
		raw   json.RawMessage
	}{{"", raw}, {"data", top["data"]}, {"stringData", top["stringData"]}} {
		if k, dup := duplicateKey(obj.raw); dup {
			return nil, nil, strings.TrimPrefix(obj.field+"."+k, "."), fmt.Errorf("duplicate field (a key given twice)")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(top)) {
		if k != "data" && k != "stringData" && len(manifest.EncryptedValues(string(top[k]))) > 0 {
			return nil, nil, k, fmt.Errorf("holds a SOPS-encrypted value: only a Secret's data and stringData values may be encrypted")
		}
	}
	for _, k := range []string{"data", "stringData"} {
		if len(manifest.EncryptedValues(string(top[k]))) == 0 {
			continue
		}
		var values map[string]string
		if err := json.Unmarshal(top[k], &values); err != nil {
			return nil, nil, k, fmt.Errorf("%s", typeError(err))
		}
		for _, key := range slices.Sorted(maps.Keys(values)) {
			v := values[key]
			enc := manifest.EncryptedValues(v)
			switch {
			case len(enc) == 0:
			case len(enc) > 1 || enc[0] != v:
				return nil, nil, k + "." + key, fmt.Errorf("holds a SOPS-encrypted value beside other text: encrypt whole values")
			case k == "data":
				if sealed == nil {
					sealed = map[string]string{}
				}
				sealed[key], values[key] = v, ""
			}
		}
		if k == "data" {
			top[k], _ = json.Marshal(values) // strings always marshal
		}
	}
	clean, _ = json.Marshal(top) // raw messages that were read always marshal
	return clean, sealed, "", nil
}

// noteSealed notes the encrypted values of o, when it is an encrypted
// Secret (decode took them out of data, or left them in stringData).
func (s *source) noteSealed(o object) {
	sec, ok := o.value.(*corev1.Secret)
	if !ok || !o.kube.Sealed {
		return
	}
	note := func(v string) {
		if s.sealed == nil {
			s.sealed = map[string]bool{}
		}
		s.sealed[v] = true
	}
	for _, enc := range o.sealed {
		note(manifest.Base64Part(enc))
	}
	for _, v := range sec.StringData {
		if enc := manifest.EncryptedValues(v); len(enc) == 1 && enc[0] == v {
			note(v)
		}
	}
}

// checkSealed adds to pod p an error for each of its values holding what
// no encrypted Secret of the source gave it: an encrypted value (a copy
// of one in a ConfigMap, a plain Secret or a file), a secret's token or
// a base64 part (hostlet's own: an author's would reach the host as
// hostlet's).
func (s *source) checkSealed(p *manifest.Sourced) {
	for field, value := range manifest.StringFields(p.Manifest) {
		if !strings.Contains(value, "ENC[") && !strings.Contains(value, "{{hostlet-") {
			continue
		}
		rest := value
		for v := range s.sealed {
			rest = strings.ReplaceAll(rest, v, "")
		}
		if strings.Contains(rest, manifest.SecretTokenPrefix) || strings.Contains(rest, manifest.Base64Prefix) || len(manifest.EncryptedValues(rest)) > 0 {
			p.Errors = append(p.Errors, &manifest.Error{Origin: p.Origin, Pod: p.Manifest.ID, Field: p.Field(field),
				Detail: "holds an encrypted value (SOPS) that is no value of an encrypted Secret of the source, or text hostlet keeps for its own secrets"})
		}
	}
	for i, v := range p.Manifest.Volumes {
		if v.Files == nil {
			continue
		}
		for j, it := range v.Files.Items {
			if s.sealed[string(it.Data)] {
				continue // an encrypted Secret's key, whole
			}
			if len(manifest.EncryptedValues(string(it.Data))) > 0 {
				p.Errors = append(p.Errors, &manifest.Error{Origin: p.Origin, Pod: p.Manifest.ID, Field: p.Field(fmt.Sprintf("volumes[%d].files.items[%d]", i, j)),
					Detail: "a file holding an encrypted value (SOPS) that is no key of an encrypted Secret of the source"})
			}
		}
	}
}

// duplicateKey returns a key the JSON object raw gives twice (raw that
// is no object has none).
func duplicateKey(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		k, _ := t.(string)
		if seen[k] {
			return k, true
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false
		}
	}
	return "", false
}
