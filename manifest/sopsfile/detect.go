package sopsfile

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// maxMetadata bounds the bytes of the metadata block decoded (a YAML sops
// mapping): far over what a file encrypted for a fleet's hosts holds.
const maxMetadata = 1 << 20

// Info is what a file's SOPS metadata says, read without a key.
type Info struct {
	// Format is the sops store the file is read with.
	Format string
	// MAC reports whether the metadata holds a MAC; a file without one
	// cannot be checked and is refused.
	MAC bool
	// Version is the sops version that wrote the file.
	Version string
	// AgeRecipients are the age public keys the data key is encrypted
	// for, in the file's order.
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
// file and what its metadata says. The content decides: a dotenv file
// named .env.prod and a YAML file without an extension are recognised.
// The error is for a file that carries SOPS metadata that cannot be read.
func Detect(name string, data []byte) (Info, bool, error) {
	if !bytes.Contains(data, []byte("sops")) {
		return Info{}, false, nil
	}
	byName := FormatForName(name)
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return detectJSON(byName, trimmed)
	}
	if info, ok := detectFlat(data); ok {
		return info, true, nil
	}
	return detectYAML(data)
}

// metadata is the part of the sops mapping read here.
type metadata struct {
	MAC       string           `json:"mac" yaml:"mac"`
	Version   string           `json:"version" yaml:"version"`
	Age       []ageKey         `json:"age" yaml:"age"`
	KeyGroups []map[string]any `json:"key_groups" yaml:"key_groups"`
	PGP       []any            `json:"pgp" yaml:"pgp"`
	KMS       []any            `json:"kms" yaml:"kms"`
	GCPKMS    []any            `json:"gcp_kms" yaml:"gcp_kms"`
	AzureKV   []any            `json:"azure_kv" yaml:"azure_kv"`
	Vault     []any            `json:"hc_vault" yaml:"hc_vault"`
	HCKMS     []any            `json:"hckms" yaml:"hckms"`
}

type ageKey struct {
	Recipient string `json:"recipient" yaml:"recipient"`
}

// info is the Info of m read as format.
func (m metadata) info(format string) Info {
	in := Info{Format: format, MAC: m.MAC != "", Version: m.Version}
	for _, a := range m.Age {
		in.AgeRecipients = append(in.AgeRecipients, a.Recipient)
	}
	for kind, keys := range map[string][]any{"pgp": m.PGP, "kms": m.KMS, "gcp_kms": m.GCPKMS, "azure_kv": m.AzureKV, "hc_vault": m.Vault, "hckms": m.HCKMS} {
		if len(keys) > 0 {
			in.OtherKeys = append(in.OtherKeys, kind)
		}
	}
	for _, g := range m.KeyGroups {
		for kind, keys := range g {
			list, _ := keys.([]any)
			for _, k := range list {
				if r, ok := recipientOf(kind, k); ok {
					in.AgeRecipients = append(in.AgeRecipients, r)
				} else if !slices.Contains(in.OtherKeys, kind) {
					in.OtherKeys = append(in.OtherKeys, kind)
				}
			}
		}
	}
	slices.Sort(in.OtherKeys)
	return in
}

// recipientOf is the recipient of an age key of a key group.
func recipientOf(kind string, key any) (string, bool) {
	if kind != "age" {
		return "", false
	}
	m, _ := key.(map[string]any)
	r, ok := m["recipient"].(string)
	return r, ok
}

// detectJSON reads a JSON file: the top-level sops object, and whether
// the file is sops's binary form (only data and sops).
func detectJSON(byName string, data []byte) (Info, bool, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
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
	_, hasData := top["data"]
	switch {
	case byName == YAML:
		format = YAML
	case byName != JSON && hasData && len(top) == 2:
		format = Binary
	}
	return m.info(format), true, nil
}

// ageRecipientKey matches the flattened key of an age recipient in a
// dotenv file's sops_ lines (after the prefix) or an INI [sops] section,
// at the top or in a key group.
var ageRecipientKey = regexp.MustCompile(`(^|_)age__list_\d+__map_recipient$`)

// otherKeyKinds are the flattened names of the kinds of key hostlet
// cannot use.
var otherKeyKinds = []string{"pgp", "kms", "gcp_kms", "azure_kv", "hc_vault", "hckms"}

// detectFlat reads a dotenv file's sops_ lines or an INI file's [sops]
// section: both flatten the metadata into keys.
func detectFlat(data []byte) (Info, bool) {
	var in Info
	found := false
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			if section == "sops" {
				in.Format, found = INI, true
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case section == "" && strings.HasPrefix(key, "sops_"):
			if in.Format != INI {
				in.Format, found = Dotenv, true
			}
			readFlat(&in, strings.TrimPrefix(key, "sops_"), value)
		case section == "sops":
			readFlat(&in, key, value)
		}
	}
	return in, found && (in.Format == INI || in.MAC || in.Version != "")
}

// readFlat takes one flattened metadata key into in.
func readFlat(in *Info, key, value string) {
	switch {
	case key == "mac":
		in.MAC = value != ""
	case key == "version":
		in.Version = value
	case ageRecipientKey.MatchString(key):
		in.AgeRecipients = append(in.AgeRecipients, value)
	default:
		for _, kind := range otherKeyKinds {
			if (strings.HasPrefix(key, kind+"__list_") || strings.Contains(key, "__map_"+kind+"__list_")) && !slices.Contains(in.OtherKeys, kind) {
				in.OtherKeys = append(in.OtherKeys, kind)
				slices.Sort(in.OtherKeys)
			}
		}
	}
}

// detectYAML finds a top-level sops key (a line starting "sops:") and
// decodes its block: the lines after it that are indented, blank or
// comments. The rest of the file is scanned, not decoded.
func detectYAML(data []byte) (Info, bool, error) {
	start := -1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if bytes.HasPrefix(data[off:next], []byte("sops:")) {
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
	var doc struct {
		Sops *metadata `yaml:"sops"`
	}
	if err := yaml3.Unmarshal(block, &doc); err != nil {
		return Info{}, true, fmt.Errorf("the sops metadata cannot be read: %w", err)
	}
	if doc.Sops == nil {
		return Info{}, false, nil
	}
	return doc.Sops.info(YAML), true, nil
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
