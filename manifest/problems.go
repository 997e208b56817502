package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/hostlet/hostlet/internal/textcap"
)

// fieldProblem is one unknown field, duplicate field or value of the wrong
// type in a manifest's JSON.
type fieldProblem struct {
	field  string
	detail string
}

// maxProblems bounds the problems reported for one manifest.
const maxProblems = 100

// fieldProblems walks raw, the JSON of one manifest, along the Manifest type
// and returns every unknown field, duplicate field and value of the wrong
// type, each with its field path (containers[0].ports[1].hostPort), in the
// order of the input. encoding/json stops at the first wrong type and names
// it without list indexes; this reports them all, as a user fixing a file
// wants.
func fieldProblems(raw []byte) []fieldProblem {
	w := &walker{dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	w.value(reflect.TypeFor[Manifest](), "")
	return w.probs
}

type walker struct {
	dec   *json.Decoder
	probs []fieldProblem
	err   error
}

func (w *walker) add(field, format string, args ...any) {
	if len(w.probs) < maxProblems {
		w.probs = append(w.probs, fieldProblem{field: field, detail: fmt.Sprintf(format, args...)})
	}
}

func (w *walker) token() json.Token {
	if w.err != nil {
		return nil
	}
	tok, err := w.dec.Token()
	if err != nil {
		w.err = err
		return nil
	}
	return tok
}

// value reads one JSON value that should hold a t.
func (w *walker) value(t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok := w.token()
	if w.err != nil {
		return
	}
	switch tok := tok.(type) {
	case nil:
		// null leaves the field unset, as in encoding/json.
	case json.Delim:
		switch {
		case tok == '{' && t.Kind() == reflect.Struct:
			w.object(path, func(key string) (reflect.Type, string, bool) {
				f, ok := jsonField(t, key)
				return f, joinField(path, key), ok
			}, t)
		case tok == '{' && t.Kind() == reflect.Map:
			w.object(path, func(key string) (reflect.Type, string, bool) {
				return t.Elem(), path + "[" + textcap.Quote(key, textcap.ExcerptBytes) + "]", true
			}, t)
		case tok == '[' && t.Kind() == reflect.Slice:
			for i := 0; w.err == nil && w.dec.More(); i++ {
				w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i))
			}
			w.token() // ']'
		default:
			w.wrongType(path, kindName(tok), t)
			w.skipRest()
		}
	case string:
		if t.Kind() != reflect.String {
			w.wrongType(path, "string", t)
		}
	case bool:
		if t.Kind() != reflect.Bool {
			w.wrongType(path, "boolean", t)
		}
	case json.Number:
		switch t.Kind() {
		case reflect.Int, reflect.Int64:
			if _, err := strconv.ParseInt(tok.String(), 10, 64); err != nil {
				w.add(path, "wrong type: got number %s, want integer", textcap.Excerpt(tok.String()))
			}
		default:
			w.wrongType(path, "number", t)
		}
	}
}

// object reads the members of an object whose '{' was read; field maps a
// key to the type of its value and its field path, or reports it unknown.
func (w *walker) object(path string, field func(key string) (reflect.Type, string, bool), t reflect.Type) {
	seen := map[string]bool{}
	for w.err == nil && w.dec.More() {
		tok := w.token()
		key, _ := tok.(string)
		ft, p, ok := field(key)
		if seen[key] {
			w.add(p, "duplicate field")
		}
		seen[key] = true
		if !ok {
			w.add(p, "%s", unknownField(t, key))
			w.skip()
			continue
		}
		w.value(ft, p)
	}
	w.token() // '}'
}

// skip reads one whole value.
func (w *walker) skip() {
	if d, ok := w.token().(json.Delim); ok && (d == '{' || d == '[') {
		w.skipRest()
	}
}

// skipRest reads up to the end of an object or list whose start was read.
func (w *walker) skipRest() {
	for depth := 1; depth > 0 && w.err == nil; {
		switch w.token() {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

func (w *walker) wrongType(path, got string, want reflect.Type) {
	w.add(path, "wrong type: got %s, want %s", got, typeName(want))
}

func kindName(d json.Delim) string {
	if d == '[' {
		return "list"
	}
	return "mapping"
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Slice:
		return "list"
	}
	return "mapping"
}

// jsonField returns the type of the field of struct t whose JSON name is
// exactly key (field names are case-sensitive).
func jsonField(t reflect.Type, key string) (reflect.Type, bool) {
	for f := range t.Fields() {
		if jsonName(f) == key {
			return f.Type, true
		}
	}
	return nil, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// unknownField describes an unknown key of struct t, suggesting the field
// it differs from only in case.
func unknownField(t reflect.Type, key string) string {
	if t.Kind() == reflect.Struct {
		for f := range t.Fields() {
			if name := jsonName(f); strings.EqualFold(name, key) {
				return fmt.Sprintf("unknown field (did you mean %q? field names are case-sensitive)", name)
			}
		}
	}
	return "unknown field"
}

var plainKeyRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// joinField appends a struct field name to a path; a key that is not a
// plain name, or is longer than an excerpt, is quoted (as an excerpt), so
// that every path stays on one line and quotes little of the input.
func joinField(path, key string) string {
	if len(key) > textcap.ExcerptBytes || !plainKeyRE.MatchString(key) {
		return path + "[" + textcap.Quote(key, textcap.ExcerptBytes) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}
