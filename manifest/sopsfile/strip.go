package sopsfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// StripMetadata returns data, a SOPS file of format, without its sops
// metadata: what is left reads as the file's own format, its encrypted
// values as ENC[...] strings (a native manifest encrypted in place decodes
// so, a dotenv file gives each name its encrypted value). data is not
// changed.
func StripMetadata(format string, data []byte) ([]byte, error) {
	switch format {
	case Dotenv:
		var out bytes.Buffer
		for line := range bytes.Lines(data) {
			if !bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("sops_")) {
				out.Write(line)
			}
		}
		return out.Bytes(), nil
	case YAML:
		trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
		if len(trimmed) > 0 && trimmed[0] == '{' {
			return stripJSON(data)
		}
		return stripYAML(data), nil
	case JSON:
		return stripJSON(data)
	case INI:
		return stripINI(data), nil
	}
	return nil, fmt.Errorf("a %s file has no values to read without decrypting it", format)
}

// stripYAML cuts every top-level sops block (each document's).
func stripYAML(data []byte) []byte {
	var out bytes.Buffer
	for off := 0; off < len(data); {
		next := len(data)
		if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		if bytes.HasPrefix(data[off:next], []byte("sops:")) {
			off += len(yamlBlock(data[off:]))
			continue
		}
		out.Write(data[off:next])
		off = next
	}
	return out.Bytes()
}

// stripJSON removes the top-level sops key; the other keys keep their
// values as written, in sorted order.
func stripJSON(data []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	delete(top, "sops")
	return json.Marshal(top)
}

// stripINI cuts the [sops] section.
func stripINI(data []byte) []byte {
	var out bytes.Buffer
	in := false
	for line := range bytes.Lines(data) {
		t := strings.TrimSpace(string(line))
		if strings.HasPrefix(t, "[") && strings.HasSuffix(t, "]") {
			in = strings.TrimSpace(t[1:len(t)-1]) == "sops"
		}
		if !in {
			out.Write(line)
		}
	}
	return out.Bytes()
}

// Unencrypted returns the names of the values of a dotenv or INI SOPS
// file that sops left in plain text (an encrypted_regex that matched
// none of them leaves a whole .env readable: sops#1886); none for the
// other formats, whose layout is the author's to encrypt in part.
func Unencrypted(format string, data []byte) []string {
	if format != Dotenv && format != INI {
		return nil
	}
	stripped, err := StripMetadata(format, data)
	if err != nil {
		return nil
	}
	return plainValues(stripped)
}

// NoValueEncrypted reports whether a YAML or JSON SOPS file holds no
// encrypted value at all (an encrypted_regex that matched nothing).
func NoValueEncrypted(format string, data []byte) bool {
	if format != YAML && format != JSON {
		return false
	}
	stripped, err := StripMetadata(format, data)
	return err == nil && !strings.Contains(string(stripped), "ENC[AES256_GCM,data:")
}

// plainValues names the NAME=VALUE lines of stripped whose value is not
// encrypted.
func plainValues(stripped []byte) []string {
	var names []string
	for line := range strings.Lines(string(stripped)) {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' || t[0] == '[' {
			continue
		}
		name, value, ok := strings.Cut(t, "=")
		value = strings.TrimSpace(value)
		if ok && value != "" && !IsEncryptedValue(value) {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names
}
