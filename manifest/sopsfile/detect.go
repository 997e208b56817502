package sopsfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	yaml3 "go.yaml.in/yaml/v3"
)

// The formats of sops's stores.
const (
	YAML   = "yaml"
	JSON   = "json"
	Dotenv = "dotenv"
	INI    = "ini"
	Binary = "binary"
)

// Bounds of the metadata read: the bytes of a YAML sops block, and its
// nodes (far over what a file encrypted for a fleet's hosts holds). The
// node walk is linear: the YAML decoder's own check of duplicate keys is
// quadratic in a mapping's keys.
const (
	maxMetadata      = 256 << 10
	maxMetadataNodes = 20_000
)

// Info is what a file's SOPS metadata says, read without a key.
type Info struct {
	// Format is the sops store the file is read with.
	Format string
	// MAC reports whether the metadata holds a MAC (an encrypted value);
	// a file without one cannot be checked and is refused.
	MAC bool
	// Version is the sops version that wrote the file.
	Version string
	// AgeRecipients are the age public keys the data key is encrypted
	// for, in the file's order (only those that look like one: age1...
	// or an SSH public key).
	AgeRecipients []string
	// OtherKeys are the kinds of the file's other keys (pgp, kms, gcp_kms,
	// azure_kv, hc_vault, hckms), which hostlet cannot use.
	OtherKeys []string
}

// FormatForName is the format sops gives a file by its name: .yaml and
// .yml, .json, .env, .ini, anything else binary.
func FormatForName(name string) string {
	switch ext := path.Ext(name); {
	case ext == ".yaml" || ext == ".yml":
		return YAML
	case ext == ".json":
		return JSON
	case strings.HasSuffix(name, ".env"):
		return Dotenv
	case ext == ".ini":
		return INI
	}
	return Binary
}

// Detect reports whether data, the content of the file name, is a SOPS
// file and what its metadata says. The content decides, as sops's stores
// read it: a JSON document with a top-level sops object, a YAML document
// with a top-level sops key, a dotenv file with sops_ lines at the start
// of a line, an INI file with a [sops] section. A dotenv file named
// .env.prod and a YAML file without an extension are recognised. The error
// is for a file that carries SOPS metadata that cannot be read.
func Detect(name string, data []byte) (Info, bool, error) {
	// Without "sops", or an escape that could spell it in JSON, a file
	// is plain: nothing is decoded (every manifest file of a source is
	// asked, at each read).
	if !bytes.Contains(data, []byte("sops")) && !bytes.Contains(data, []byte(`\u`)) {
		return Info{}, false, nil
	}
	byName := FormatForName(name)
	if at := jsonStart(data); at >= 0 {
		return detectJSON(byName, data[at:])
	}
	if !bytes.Contains(data, []byte("sops")) {
		return Info{}, false, nil
	}
	if info, ok, err := detectYAML(data); ok || err != nil {
		return info, ok, err
	}
	info, ok := detectFlat(data)
	return info, ok, nil
}

// jsonStart is the offset of the '{' that starts data as a JSON document
// (in a .json file, or a .yaml one: YAML holds JSON), after white space,
// a byte-order mark, YAML comment lines and document markers; -1 when
// data does not start so.
func jsonStart(data []byte) int {
	off := 0
	for line := range bytes.Lines(data) {
		t := bytes.TrimLeft(line, " \t\r\n\ufeff")
		switch {
		case len(bytes.TrimSpace(t)) == 0, t[0] == '#', bytes.Equal(bytes.TrimSpace(t), []byte("---")):
			off += len(line)
			continue
		case t[0] == '{':
			return off + len(line) - len(t)
		}
		return -1
	}
	return -1
}

// metadata is the part of the sops mapping read here.
type metadata struct {
	MAC       string           `json:"mac"`
	Version   any              `json:"version"`
	Age       []ageKey         `json:"age"`
	KeyGroups []map[string]any `json:"key_groups"`
	PGP       []any            `json:"pgp"`
	KMS       []any            `json:"kms"`
	GCPKMS    []any            `json:"gcp_kms"`
	AzureKV   []any            `json:"azure_kv"`
	Vault     []any            `json:"hc_vault"`
	HCKMS     []any            `json:"hckms"`
}

type ageKey struct {
	Recipient string `json:"recipient"`
}

// recipientShaped reports whether r looks like an age recipient (age1 and
// 20 to 200 of [0-9a-z]) or an SSH public key (ssh-ed25519 or ssh-rsa, a
// space, 20 to 1000 of base64): anything else a file names is left out
// (it would reach a log). Written out rather than as a regular expression,
// whose counted repetitions compiled to 120 KB held for the process's life.
func recipientShaped(r string) bool {
	if key, ok := strings.CutPrefix(r, "age1"); ok {
		return len(key) >= 20 && len(key) <= 200 && onlyBytes(key, "0123456789abcdefghijklmnopqrstuvwxyz")
	}
	for _, kind := range []string{"ssh-ed25519 ", "ssh-rsa "} {
		if key, ok := strings.CutPrefix(r, kind); ok {
			return len(key) >= 20 && len(key) <= 1000 && onlyBytes(key, base64Bytes)
		}
	}
	return false
}

// base64Bytes are the bytes of standard base64 with its padding.
const base64Bytes = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="

// onlyBytes reports whether every byte of s is one of set's.
func onlyBytes(s, set string) bool {
	for i := range len(s) {
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
	}
	return true
}

// encryptedMAC reports whether a MAC is one sops wrote: an encrypted
// value.
func encryptedMAC(mac string) bool { return strings.HasPrefix(mac, "ENC[AES256_GCM,data:") }

// info is the Info of m read as format.
func (m metadata) info(format string) Info {
	in := Info{Format: format, MAC: encryptedMAC(m.MAC)}
	if v, ok := m.Version.(string); ok {
		in.Version = v
	}
	in.addRecipients(m.Age)
	for kind, keys := range map[string][]any{"pgp": m.PGP, "kms": m.KMS, "gcp_kms": m.GCPKMS, "azure_kv": m.AzureKV, "hc_vault": m.Vault, "hckms": m.HCKMS} {
		if len(keys) > 0 {
			in.addOther(kind)
		}
	}
	for _, g := range m.KeyGroups {
		for kind, keys := range g {
			list, _ := keys.([]any)
			for _, k := range list {
				if kind != "age" {
					in.addOther(kind)
					continue
				}
				km, _ := k.(map[string]any)
				r, _ := km["recipient"].(string)
				in.addRecipients([]ageKey{{Recipient: r}})
			}
		}
	}
	return in
}

func (in *Info) addRecipients(keys []ageKey) {
	for _, k := range keys {
		if recipientShaped(k.Recipient) {
			in.AgeRecipients = append(in.AgeRecipients, k.Recipient)
		}
	}
}

func (in *Info) addOther(kind string) {
	if !slices.Contains(in.OtherKeys, kind) && slices.Contains(otherKeyKinds, kind) {
		in.OtherKeys = append(in.OtherKeys, kind)
		slices.Sort(in.OtherKeys)
	}
}

// detectJSON reads the first JSON value of data as sops's JSON store does
// (what follows it is not read): its top-level sops object, and whether
// the file is sops's binary form (only a string data and sops).
func detectJSON(byName string, data []byte) (Info, bool, error) {
	var top map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&top); err != nil {
		return Info{}, false, nil
	}
	raw, ok := top["sops"]
	if !ok {
		return Info{}, false, nil
	}
	var m metadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return Info{}, true, fmt.Errorf("the sops metadata cannot be read: %w", err)
	}
	format := JSON
	var dataString string
	isBinary := len(top) == 2 && json.Unmarshal(top["data"], &dataString) == nil
	switch {
	case byName == YAML:
		format = YAML
	case byName != JSON && isBinary:
		format = Binary
	}
	return m.info(format), true, nil
}

// otherKeyKinds are the kinds of key hostlet cannot use.
var otherKeyKinds = []string{"pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "hckms"}

// ageRecipientKey matches the flattened key of an age recipient in a
// dotenv file's sops_ lines (after the prefix) or an INI [sops] section,
// at the top or in a key group.
var ageRecipientKey = regexp.MustCompile(`(^|_)age__list_\d+__map_recipient$`)

// detectFlat reads a dotenv file's sops_ lines or an INI file's [sops]
// section, as sops's stores do: a dotenv file is lines NAME=VALUE (and
// comments), its metadata the sops_ names; an INI file's metadata is its
// [sops] section. Keys and section headers count at the start of a line
// only.
func detectFlat(data []byte) (Info, bool) {
	var in Info
	section, sawINI, dotenv := "", false, true
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "[") && strings.HasSuffix(strings.TrimRight(line, " \t\r"), "]") {
			section, dotenv = strings.TrimSpace(strings.TrimRight(line, " \t\r")[1:len(strings.TrimRight(line, " \t\r"))-1]), false
			sawINI = sawINI || section == "sops"
			continue
		}
		if t := strings.TrimSpace(line); t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			dotenv = false
			continue
		}
		switch {
		case section == "" && strings.HasPrefix(key, "sops_"):
			readFlat(&in, strings.TrimPrefix(key, "sops_"), value)
		case section == "sops":
			readFlat(&in, strings.TrimSpace(key), strings.TrimSpace(value))
		}
	}
	switch {
	case sawINI:
		in.Format = INI
	case dotenv && (in.MAC || in.Version != ""):
		in.Format = Dotenv
	default:
		return Info{}, false
	}
	return in, true
}

// readFlat takes one flattened metadata key into in.
func readFlat(in *Info, key, value string) {
	switch {
	case key == "mac":
		in.MAC = encryptedMAC(value)
	case key == "version":
		in.Version = value
	case ageRecipientKey.MatchString(key):
		in.addRecipients([]ageKey{{Recipient: value}})
	default:
		for _, kind := range otherKeyKinds {
			if strings.HasPrefix(key, kind+"__list_") || strings.Contains(key, "__map_"+kind+"__list_") {
				in.addOther(kind)
			}
		}
	}
}

// sopsKeyLine matches a top-level sops key of a YAML document, quoted or
// not.
var sopsKeyLine = regexp.MustCompile(`^(sops|"sops"|'sops')[ \t]*:`)

// detectYAML finds a top-level sops key (a line starting "sops:") and
// reads its block, the lines after it that are indented, blank or
// comments, as YAML nodes within a budget. The rest of the file is
// scanned, not decoded.
func detectYAML(data []byte) (Info, bool, error) {
	start := -1
	for off := 0; off < len(data); {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		if sopsKeyLine.Match(data[off:next]) {
			start = off
			break
		}
		off = next
	}
	if start < 0 {
		return Info{}, false, nil
	}
	block := yamlBlock(data[start:])
	if len(block) > maxMetadata {
		return Info{}, true, fmt.Errorf("the sops metadata is over %d KiB", maxMetadata>>10)
	}
	var doc yaml3.Node
	if err := yaml3.Unmarshal(block, &doc); err != nil {
		return Info{}, true, errors.New("the sops metadata cannot be read as YAML")
	}
	budget := maxMetadataNodes
	v, err := nodeValue(&doc, &budget, 0)
	if err != nil {
		return Info{}, true, err
	}
	top, _ := v.(map[string]any)
	raw, ok := top["sops"].(map[string]any)
	if !ok {
		return Info{}, true, errors.New("the sops metadata is not a mapping")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return Info{}, true, err
	}
	var m metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return Info{}, true, fmt.Errorf("the sops metadata cannot be read: %w", err)
	}
	return m.info(YAML), true, nil
}

// nodeValue is node as plain values (maps with string keys, lists,
// strings), spending one of budget per node; aliases, more nodes than the
// budget or nesting deeper than 32 are errors.
func nodeValue(n *yaml3.Node, budget *int, depth int) (any, error) {
	if *budget--; *budget < 0 || depth > 32 {
		return nil, errors.New("the sops metadata holds too much structure")
	}
	switch n.Kind {
	case yaml3.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return nodeValue(n.Content[0], budget, depth+1)
	case yaml3.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := nodeValue(n.Content[i+1], budget, depth+1)
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml3.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := nodeValue(c, budget, depth+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		return l, nil
	case yaml3.ScalarNode:
		return n.Value, nil
	}
	return nil, errors.New("the sops metadata holds an alias")
}

// yamlBlock is the first line of b and the lines after it that belong to
// its block: indented, blank or comments.
func yamlBlock(b []byte) []byte {
	end := bytes.IndexByte(b, '\n')
	if end < 0 {
		return b
	}
	off := end + 1
	for off < len(b) {
		next := len(b)
		if i := bytes.IndexByte(b[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		line := b[off:next]
		if t := bytes.TrimSpace(line); len(t) > 0 && line[0] != ' ' && line[0] != '\t' && t[0] != '#' {
			break
		}
		off = next
	}
	return b[:off]
}

// IsEncryptedValue reports whether s is a value sops encrypted in place
// (ENC[AES256_GCM,data:...,iv:...,tag:...,type:...]).
func IsEncryptedValue(s string) bool {
	return strings.HasPrefix(s, "ENC[AES256_GCM,data:") && strings.HasSuffix(s, "]")
}
