package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"
	"filippo.io/age/agessh"
	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/aes"
	sopsage "github.com/getsops/sops/v3/age"
	"github.com/getsops/sops/v3/config"
	"github.com/getsops/sops/v3/keyservice"
	"github.com/getsops/sops/v3/stores/dotenv"
	"github.com/getsops/sops/v3/stores/ini"
	sopsjson "github.com/getsops/sops/v3/stores/json"
	"github.com/getsops/sops/v3/stores/yaml"
	"google.golang.org/grpc"
)

// maxError bounds an error's text in the answer.
const maxError = 300

// failure is a file's error of a kind.
type failure struct {
	kind string
	msg  string
}

func (f *failure) Error() string { return f.msg }

func fail(kind, format string, args ...any) error {
	return &failure{kind: kind, msg: bounded(fmt.Sprintf(format, args...))}
}

// bounded cuts s to maxError bytes.
func bounded(s string) string {
	if len(s) <= maxError {
		return s
	}
	return s[:maxError] + "…"
}

// store is the part of a sops store used here.
type store interface {
	LoadEncryptedFile(in []byte) (sops.Tree, error)
	EmitPlainFile(branches sops.TreeBranches) ([]byte, error)
}

// storeFor returns sops's store of format.
func storeFor(format string) (store, error) {
	c := config.NewStoresConfig() // the sops CLI's defaults
	switch format {
	case "yaml":
		return yaml.NewStore(&c.YAML), nil
	case "json":
		return sopsjson.NewStore(&c.JSON), nil
	case "dotenv":
		return dotenv.NewStore(&c.Dotenv), nil
	case "ini":
		return ini.NewStore(&c.INI), nil
	case "binary":
		return sopsjson.NewBinaryStore(&c.JSONBinary), nil
	}
	return nil, fail(KindFormat, "unknown format %q (yaml, json, dotenv, ini or binary)", format)
}

// decryptOne decrypts f; a panic in sops on a crafted file is that
// file's error, not the end of the request.
func decryptOne(ids sopsage.ParsedIdentities, f File) (d *decrypted, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fail(KindFormat, "sops failed on the file (a %s file it cannot read)", f.Format)
		}
	}()
	return decrypt(ids, f.Format, f.Data)
}

// decrypt returns the plaintext of data, a SOPS file of format, as
// sops's own decrypt path does: the data key from the first identity
// that opens it, every value decrypted and the MAC compared.
func decrypt(ids sopsage.ParsedIdentities, format string, data []byte) (*decrypted, error) {
	st, err := storeFor(format)
	if err != nil {
		return nil, err
	}
	if err := precheck(format, data); err != nil {
		return nil, fail(KindFormat, "not a SOPS %s file: %v", format, err)
	}
	tree, err := st.LoadEncryptedFile(data)
	if err != nil {
		// sops's message may quote a line of the file: not shown.
		return nil, fail(KindFormat, "not a SOPS %s file (sops cannot read its structure)", format)
	}
	key, err := tree.Metadata.GetDataKeyWithKeyServices([]keyservice.KeyServiceClient{ageKeys{ids}}, nil)
	if err != nil {
		return nil, fail(KindNoKey, "no matching age identity (the file is encrypted for %s)", recipients(tree.Metadata))
	}
	encrypted := leaves(tree.Branches)
	cipher := aes.NewCipher()
	mac, err := tree.Decrypt(key, cipher)
	if err != nil {
		return nil, fail(KindIntegrity, "a value does not decrypt: the file was changed after it was encrypted")
	}
	want, err := cipher.Decrypt(tree.Metadata.MessageAuthenticationCode, key, tree.Metadata.LastModified.Format(time.RFC3339))
	if err != nil || want != mac {
		return nil, fail(KindIntegrity, "MAC mismatch: the file was changed after it was encrypted")
	}
	plain, err := st.EmitPlainFile(tree.Branches)
	if err != nil {
		return nil, fail(KindFormat, "the plaintext cannot be written as %s", format)
	}
	if len(plain) > maxPlain(len(data)) {
		return nil, fail(KindFormat, "the plaintext would be over %d bytes, far more than the file's %d", maxPlain(len(data)), len(data))
	}
	d := &decrypted{plain: plain}
	if format != "binary" { // one value, the file itself
		d.values = pairValues(encrypted, leaves(tree.Branches))
	}
	return d, nil
}

// decrypted is a file's plaintext and, for a file of values, each
// encrypted value as the file holds it (ENC[AES256_GCM,...]) with its
// plaintext.
type decrypted struct {
	plain  []byte
	values map[string]string
}

// leaves are the values of a sops tree, depth first in the file's order,
// comments left out.
func leaves(branches sops.TreeBranches) []any {
	var out []any
	var visit func(v any)
	visit = func(v any) {
		switch v := v.(type) {
		case sops.TreeBranch:
			for _, item := range v {
				if _, ok := item.Key.(sops.Comment); !ok {
					visit(item.Value)
				}
			}
		case []any:
			for _, e := range v {
				if _, ok := e.(sops.Comment); !ok {
					visit(e)
				}
			}
		case sops.Comment:
		default:
			out = append(out, v)
		}
	}
	for _, b := range branches {
		visit(b)
	}
	return out
}

// pairValues maps each encrypted leaf of before to the same leaf of after
// (the tree decrypted in place), as text.
func pairValues(before, after []any) map[string]string {
	if len(before) != len(after) {
		return nil
	}
	values := map[string]string{}
	for i, b := range before {
		enc, ok := b.(string)
		if !ok || !strings.HasPrefix(enc, "ENC[") {
			continue
		}
		values[enc] = valueText(after[i])
	}
	return values
}

// valueText is a decrypted value as an environment variable holds it.
func valueText(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(v)
}

// plainRecipient is what a recipient looks like (age1..., or an SSH
// public key): one that does not is quoted, so that no line break or
// terminal escape of a file reaches a log.
var plainRecipient = regexp.MustCompile(`^[A-Za-z0-9+/= -]+$`)

func shownRecipient(r string) string {
	if len(r) <= 1100 && plainRecipient.MatchString(r) {
		return r
	}
	return strconv.Quote(bounded(r))
}

// maxPlain bounds the plaintext of a file of n bytes: sops's ciphertext
// is longer than its plaintext, in every format but the layout of YAML
// and JSON, which writing again may widen (indentation).
func maxPlain(n int) int { return 2*n + 1<<20 }

// recipients names the keys a file is encrypted for: age recipients, and
// the kind of every other key.
func recipients(m sops.Metadata) string {
	var names []string
	for _, group := range m.KeyGroups {
		for _, k := range group {
			if a, ok := k.(*sopsage.MasterKey); ok {
				names = append(names, shownRecipient(a.Recipient))
				continue
			}
			names = append(names, "a "+k.TypeToIdentifier()+" key")
		}
	}
	if len(names) == 0 {
		return "no key"
	}
	return strings.Join(names, ", ")
}

// ageKeys is the key service sops asks for the data key: it opens age
// keys with the request's identities and refuses every other kind
// (hostlet uses age keys only, and reaches no KMS).
type ageKeys struct {
	ids sopsage.ParsedIdentities
}

func (a ageKeys) Encrypt(context.Context, *keyservice.EncryptRequest, ...grpc.CallOption) (*keyservice.EncryptResponse, error) {
	return nil, errors.New("hostlet-sops does not encrypt")
}

func (a ageKeys) Decrypt(_ context.Context, req *keyservice.DecryptRequest, _ ...grpc.CallOption) (*keyservice.DecryptResponse, error) {
	k, ok := req.GetKey().GetKeyType().(*keyservice.Key_AgeKey)
	if !ok {
		return nil, errors.New("not an age key: hostlet decrypts with age keys only")
	}
	if len(a.ids) == 0 {
		return nil, errors.New("no age identity")
	}
	mk := &sopsage.MasterKey{Recipient: k.AgeKey.GetRecipient(), EncryptedKey: string(req.GetCiphertext())}
	a.ids.ApplyToMasterKey(mk)
	plain, err := mk.Decrypt()
	if err != nil {
		return nil, err
	}
	return &keyservice.DecryptResponse{Plaintext: plain}, nil
}

// parseIdentities parses the request's age identities and SSH keys; a
// request without any is refused, so that sops never looks for keys in
// the environment or the home folder.
func parseIdentities(req Request) (sopsage.ParsedIdentities, error) {
	var ids sopsage.ParsedIdentities
	for i, text := range req.Identities {
		parsed, err := age.ParseIdentities(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("age identities %d: %w", i+1, err)
		}
		ids = append(ids, parsed...)
	}
	for i, pem := range req.SSHKeys {
		id, err := agessh.ParseIdentity(bytes.TrimSpace(pem))
		if err != nil {
			return nil, fmt.Errorf("SSH key %d: %w", i+1, err)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 && len(req.Files) > 0 {
		return nil, errors.New("no age identity or SSH key in the request")
	}
	return ids, nil
}
