package kube

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

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
