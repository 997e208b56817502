package manifest

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"unicode/utf8"

	yaml2 "go.yaml.in/yaml/v2"
)

// yamlToJSON converts one YAML document to JSON as sigs.k8s.io/yaml's
// YAMLToJSONStrict does (the same decoder, go.yaml.in/yaml/v2 in strict
// mode, and the same conversion of keys, so a document decodes to the
// same manifest), but written straight into one buffer sized for it:
// encoding/json escaped <, > and & as six bytes each (a document of '<'
// took six times its size) and built the JSON in a buffer of its own
// before copying it.
func yamlToJSON(doc []byte) ([]byte, error) {
	if len(doc) > bigDocument {
		runtime.GC()
	}
	var obj any
	if err := yaml2.UnmarshalStrict(doc, &obj); err != nil {
		return nil, err
	}
	obj, err := jsonable(obj)
	if err != nil {
		return nil, err
	}
	return appendJSON(make([]byte, 0, len(doc)+64), obj)
}

// appendJSON appends v (what jsonable returns) to b as encoding/json
// writes it, up to the escaping of strings (which decode the same).
// Numbers and values of other types are written by encoding/json.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return appendJSONString(b, t), nil
	case bool:
		return strconv.AppendBool(b, t), nil
	case int:
		return strconv.AppendInt(b, int64(t), 10), nil
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(t)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendJSONString(b, k), ':')
			var err error
			if b, err = appendJSON(b, t[k]); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, item := range t {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, item); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, js...), nil
}

// appendJSONString appends s to b as a JSON string: quotes, backslashes
// and control characters escaped, invalid UTF-8 written as U+FFFD (as
// encoding/json does); runs of other bytes are copied as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r != utf8.RuneError || size != 1 {
				i += size
				continue
			}
		}
		b = append(b, s[start:i]...)
		switch {
		case c >= utf8.RuneSelf:
			b = append(b, `\ufffd`...)
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// jsonable is sigs.k8s.io/yaml's convertToJSONableObject without a
// target: mappings get string keys (ints, floats and booleans written as
// go-yaml writes them), lists are converted item by item, and every other
// value is kept.
func jsonable(v any) (any, error) {
	switch t := v.(type) {
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, item := range t {
			key, err := jsonKey(k, item)
			if err != nil {
				return nil, err
			}
			if out[key], err = jsonable(item); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, item := range t {
			var err error
			if out[i], err = jsonable(item); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}

// jsonKey writes a mapping's key as a JSON key.
func jsonKey(k, v any) (string, error) {
	switch t := k.(type) {
	case string:
		return t, nil
	case int:
		return strconv.Itoa(t), nil
	case int64:
		return strconv.FormatInt(t, 10), nil
	case float64:
		s := strconv.FormatFloat(t, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(t), nil
	}
	return "", fmt.Errorf("unsupported map key of type: %s, key: %+#v, value: %+#v", reflect.TypeOf(k), k, v)
}

// bigDocument is the size from which a document is decoded from a
// collected heap: its decode takes about four times its size for a
// moment (the YAML scanner grows a long scalar by a quarter at a time),
// and the collector, paced on the heap before it, would let the heap grow
// past that by as much again.
const bigDocument = 1 << 20
