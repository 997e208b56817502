package manifest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"regexp"
	"strings"
)

// Sealed is a SOPS-encrypted file of a source that a manifest's values
// come from (docs/secrets.md): its ciphertext as the source holds it. It
// travels with the manifest (saved sets, kept versions, a published set),
// so that the host decrypts it again, in memory, whenever it creates a
// container; no plaintext is ever kept with a manifest. Only hostlet's
// readers attach one: Decode drops what an author writes here. Immutable
// once made: copies of a manifest share it.
type Sealed struct {
	// File names the file in its source ("shop/.env"), in reasons and
	// errors.
	File string `json:"file"`
	// Format is sops's format of the file (yaml, json, dotenv, ini,
	// binary).
	Format string `json:"format"`
	Data   []byte `json:"data"`
}

// encryptedValue matches a value sops encrypted (ENC[AES256_GCM,...]).
var encryptedValue = regexp.MustCompile(`ENC\[AES256_GCM,data:[A-Za-z0-9+/=]*,iv:[A-Za-z0-9+/=]+,tag:[A-Za-z0-9+/=]+,type:[a-z]+\]`)

// EncryptedValues returns the values sops encrypted that s holds, in
// order: an env value may be one, or hold one ("postgres://u:${PW}@db"
// with PW from an encrypted .env).
func EncryptedValues(s string) []string {
	if !strings.Contains(s, "ENC[") {
		return nil
	}
	return encryptedValue.FindAllString(s, -1)
}

// SecretTokenPrefix starts the token that stands for a decrypted value in
// a manifest the host holds: "{{hostlet-secret:<file>:<keyed hash of the
// plaintext>}}", the file being the Sealed file the value is of. The
// keyed hash changes with the plaintext and with nothing else, so the spec
// hash, which sees the token, recreates a container when a secret's
// plaintext changes and never when its file is only encrypted again.
const SecretTokenPrefix = "{{hostlet-secret:"

// secretToken matches a token; its groups are the file and the hash.
var secretToken = regexp.MustCompile(`\{\{hostlet-secret:([^{}]+):([0-9a-f]{32})\}\}`)

// SecretToken returns the token of a value of file with keyed hash mac
// (32 hex digits).
func SecretToken(file, mac string) string { return SecretTokenPrefix + file + ":" + mac + "}}" }

// SecretTokens returns the tokens s holds, in order.
func SecretTokens(s string) []string {
	if !strings.Contains(s, SecretTokenPrefix) {
		return nil
	}
	return secretToken.FindAllString(s, -1)
}

// SecretTokenFile is the file a token's value is of ("" for no token).
func SecretTokenFile(tok string) string {
	m := secretToken.FindStringSubmatch(tok)
	if m == nil {
		return ""
	}
	return m[1]
}

// MaskSecretTokens is s with each token replaced by "{{secret:<file>}}":
// what of s is not secret.
func MaskSecretTokens(s string) string {
	if !strings.Contains(s, SecretTokenPrefix) {
		return s
	}
	return secretToken.ReplaceAllString(s, "{{secret:$1}}")
}

// HasSecrets reports whether m carries encrypted files.
func (m Manifest) HasSecrets() bool { return len(m.Sealed) > 0 }

// forgetSealed drops what a manifest's author wrote in the fields only
// hostlet's readers fill in (Sealed, and a files item's Sealed).
func forgetSealed(m *Manifest) {
	m.Sealed = nil
	for _, v := range m.Volumes {
		if v.Files == nil {
			continue
		}
		for _, it := range v.Files.Items {
			if it.Sealed != "" {
				// Files values are shared: a new one without the mark.
				items := append([]FileItem(nil), v.Files.Items...)
				for i := range items {
					items[i].Sealed = ""
				}
				*v.Files = *NewFiles(v.Files.Source, v.Files.Secret, items)
				break
			}
		}
	}
}

// StringFields yields every non-empty string of m with its field path
// ("containers[0].image", "labels.tier"), in field order (map entries in
// no order); file contents ([]byte) and Sealed are left out.
func StringFields(m Manifest) iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		walkStrings(reflect.ValueOf(m), "", yield)
	}
}

// walkStrings yields the strings of v below path; false when yield asked
// to stop.
func walkStrings(v reflect.Value, path string, yield func(string, string) bool) bool {
	switch v.Kind() {
	case reflect.String:
		return v.Len() == 0 || yield(path, v.String())
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || walkStrings(v.Elem(), path, yield)
	case reflect.Struct:
		return walkStruct(v, path, yield)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return true
		}
		for i := range v.Len() {
			if !walkStrings(v.Index(i), fmt.Sprintf("%s[%d]", path, i), yield) {
				return false
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := fmt.Sprint(it.Key().Interface())
			if !yield(join(path, k)+" (key)", k) || !walkStrings(it.Value(), join(path, k), yield) {
				return false
			}
		}
	}
	return true
}

func walkStruct(v reflect.Value, path string, yield func(string, string) bool) bool {
	t := v.Type()
	for i := range v.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Type == reflect.TypeFor[[]*Sealed]() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if !walkStrings(v.Field(i), join(path, name), yield) {
			return false
		}
	}
	return true
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// ReservedText returns an error of m (from origin) for each field that
// holds what hostlet writes for itself: a secret's token, or a base64
// part. An author's would reach the host as if hostlet had written it.
func ReservedText(m Manifest, origin Origin) []*Error {
	var out []*Error
	for field, value := range StringFields(m) {
		if strings.Contains(value, SecretTokenPrefix) || strings.Contains(value, Base64Prefix) {
			out = append(out, &Error{Origin: origin, Pod: m.ID, Field: field,
				Detail: "holds " + SecretTokenPrefix + " or " + Base64Prefix + ", which hostlet keeps for its own secrets"})
		}
	}
	return out
}

// Base64Prefix starts a part of an env value that is base64 of what the
// container gets: "{{hostlet-base64:" + base64 text + "}}". Hostlet's
// translation of a Kubernetes Secret's encrypted data value (base64 under
// the encryption) writes "{{hostlet-base64:ENC[...]}}"; the host decodes
// it once the value is decrypted (DecodeBase64Parts). Only a value that
// held a secret token is decoded.
const Base64Prefix = "{{hostlet-base64:"

// base64Part matches a Base64Prefix part: base64 text, the plaintext of a
// decrypted value.
var base64Part = regexp.MustCompile(`\{\{hostlet-base64:([A-Za-z0-9+/=\s]*)\}\}`)

// Base64Part wraps s (base64 text, or a value encrypting it) as a part
// to decode.
func Base64Part(s string) string { return Base64Prefix + s + "}}" }

// DecodeBase64Parts returns s with each Base64Prefix part replaced by the
// bytes its base64 text stands for.
func DecodeBase64Parts(s string) (string, error) {
	if !strings.Contains(s, Base64Prefix) {
		return s, nil
	}
	if strings.Count(s, Base64Prefix) != len(base64Part.FindAllStringIndex(s, -1)) {
		return "", errors.New("a base64 part that is not base64 text")
	}
	var err error
	out := base64Part.ReplaceAllStringFunc(s, func(part string) string {
		b, derr := DecodeBase64(base64Part.FindStringSubmatch(part)[1])
		if derr != nil && err == nil {
			err = derr
		}
		return string(b)
	})
	if err != nil {
		return "", err
	}
	return out, nil
}

// DecodeBase64 is the bytes base64 text s stands for, white space left
// out; the error never tells where s stops being base64 (its offset
// would tell a secret's length).
func DecodeBase64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		return nil, errors.New("a base64 value that does not decode")
	}
	return b, nil
}

// SealedItemValue reports whether the data of a files item marked Sealed
// stands for one encrypted value of its file (a key of a Kubernetes
// Secret encrypted in place) rather than for the whole file: data is
// that value (ENC[...], a stringData value) or a base64 part of it (a
// data value, base64 under the encryption). It returns the value and
// whether its plaintext is base64 to decode. A whole file's ciphertext
// is never one value: it holds its sops metadata.
func SealedItemValue(data []byte) (enc string, decode, ok bool) {
	s, decode := unwrapBase64Part(string(data))
	if len(s) > 0 && s[0] == 'E' && encryptedValue.FindString(s) == s {
		return s, decode, true
	}
	return "", false, false
}

// SealedItemToken is the token the data of a files item marked Sealed
// holds once the host made tokens of it (secrets.Tokenize): the token of
// the whole file's plaintext, or of a value's, and whether that value's
// plaintext is base64 to decode; ok is false for data of another form.
func SealedItemToken(data []byte) (tok string, decode, ok bool) {
	s, decode := unwrapBase64Part(string(data))
	if strings.HasPrefix(s, SecretTokenPrefix) && secretToken.FindString(s) == s {
		return s, decode, true
	}
	return "", false, false
}

// SealedItemData is what the data of a files item marked Sealed becomes
// when tok stands for the value or file it held: tok, or a base64 part
// of tok when decode.
func SealedItemData(tok string, decode bool) []byte {
	if decode {
		return []byte(Base64Part(tok))
	}
	return []byte(tok)
}

// unwrapBase64Part is s without its Base64Prefix and closing "}}" when s
// is one base64 part (true), else s.
func unwrapBase64Part(s string) (string, bool) {
	if strings.HasPrefix(s, Base64Prefix) && strings.HasSuffix(s, "}}") && len(s) >= len(Base64Prefix)+2 {
		return s[len(Base64Prefix) : len(s)-2], true
	}
	return s, false
}
