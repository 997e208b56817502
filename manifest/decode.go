package manifest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-multierror"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxSize is the largest file or body hostlet reads from any source.
const MaxSize = 10 << 20

// ErrTooLarge is returned (wrapped) for input over the size limit.
var ErrTooLarge = errors.New("larger than the size limit")

// ReadLimited reads r up to limit bytes and fails, without reading further,
// when r holds more.
func ReadLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// ReadFile reads a manifest file, refusing one over MaxSize before reading it.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxSize {
		return nil, fmt.Errorf("%d bytes: %w of %d bytes", fi.Size(), ErrTooLarge, MaxSize)
	}
	return ReadLimited(f, MaxSize)
}

// Decode decodes every manifest in data: one manifest, a list of manifests,
// or several YAML documents separated by "---", in YAML or JSON. Unknown and
// duplicate fields are errors. origin.Index is set per manifest: documents
// and list items are numbered in order from 0.
//
// The returned error, if any, is a *multierror.Error of *Error values; the
// manifests decoded without error are returned alongside it.
func Decode(data []byte, origin Origin) ([]Sourced, error) {
	if len(data) > MaxSize {
		return nil, &Error{Origin: origin, Detail: fmt.Sprintf("%d bytes: %v of %d bytes", len(data), ErrTooLarge, MaxSize)}
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return nil, &Error{Origin: origin, Detail: "not a text file (binary data or invalid UTF-8)"}
	}
	var (
		out  []Sourced
		errs *multierror.Error
	)
	index := 0
	for docNum, doc := range splitDocuments(data) {
		items, err := documentItems(doc)
		if err != nil {
			errs = multierror.Append(errs, &Error{Origin: origin, Detail: fmt.Sprintf("document %d: %v", docNum+1, err)})
			continue
		}
		for _, raw := range items {
			o := origin
			o.Index = index
			index++
			m, strict, err := decodeOne(raw, o)
			if err != nil {
				errs = multierror.Append(errs, err)
				continue
			}
			out = append(out, Sourced{Origin: o, Manifest: m, Errors: strict})
		}
	}
	if index == 0 && errs == nil {
		errs = multierror.Append(errs, &Error{Origin: origin, Detail: "no manifest found (empty file)"})
	}
	return out, errs.ErrorOrNil()
}

// splitDocuments splits YAML text on lines that hold only "---".
func splitDocuments(data []byte) [][]byte {
	var (
		docs [][]byte
		cur  bytes.Buffer
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), MaxSize+1)
	sc.Split(scanLinesKeepEOL)
	for sc.Scan() {
		line := sc.Bytes()
		if t := strings.TrimRight(string(line), " \t\r\n"); t == "---" || strings.HasPrefix(t, "--- #") {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
	}
	docs = append(docs, cur.Bytes())
	return docs
}

func scanLinesKeepEOL(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, data[:i+1], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// documentItems turns one YAML/JSON document into the JSON of each manifest
// it holds: none for an empty document, one for an object, each element of a
// list.
func documentItems(doc []byte) ([][]byte, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, nil
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("not valid YAML or JSON: %w", cleanYAMLError(err))
	}
	js = bytes.TrimSpace(js)
	switch {
	case bytes.Equal(js, []byte("null")):
		return nil, nil
	case len(js) > 0 && js[0] == '{':
		return [][]byte{js}, nil
	case len(js) > 0 && js[0] == '[':
		var list []jsonRaw
		if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &list); err != nil {
			return nil, fmt.Errorf("reading list: %w", err)
		}
		items := make([][]byte, len(list))
		for i, r := range list {
			items[i] = r
		}
		return items, nil
	default:
		return nil, fmt.Errorf("expected a manifest (a mapping) or a list of manifests, found %s", describeJSON(js))
	}
}

// jsonRaw keeps one list element undecoded.
type jsonRaw []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *jsonRaw) UnmarshalJSON(b []byte) error {
	*r = bytes.Clone(b)
	return nil
}

func describeJSON(js []byte) string {
	switch js[0] {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a scalar value"
	}
}

func cleanYAMLError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	return errors.New(msg)
}

// decodeOne decodes one manifest strictly. A manifest that cannot be read
// is an error; unknown or duplicate fields come back as strict errors, with
// their field path and the pod's id, beside the manifest decoded.
func decodeOne(raw []byte, origin Origin) (Manifest, []*Error, error) {
	var m Manifest
	if len(raw) == 0 || raw[0] != '{' {
		return m, nil, &Error{Origin: origin, Detail: fmt.Sprintf("manifest %d: expected a mapping, found %s", origin.Index+1, describeJSON(raw))}
	}
	strict, err := kjson.UnmarshalStrict(raw, &m)
	if err != nil {
		return m, nil, &Error{Origin: origin, Pod: podIDOf(raw), Detail: typeErrorDetail(err)}
	}
	var out []*Error
	for _, s := range strict {
		field, detail := "", s.Error()
		var fe kjson.FieldError
		if errors.As(s, &fe) {
			field = strings.TrimPrefix(fe.FieldPath(), ".")
			detail = strictDetail(s.Error())
		}
		out = append(out, &Error{Origin: origin, Pod: m.ID, Field: field, Detail: detail})
	}
	return m, out, nil
}

// strictDetail turns `unknown field "a.b"` into "unknown field".
func strictDetail(msg string) string {
	switch {
	case strings.HasPrefix(msg, "unknown field"):
		return "unknown field (field names are case-sensitive)"
	case strings.HasPrefix(msg, "duplicate field"):
		return "duplicate field"
	}
	return msg
}

// typeErrorDetail makes encoding/json's type errors readable.
func typeErrorDetail(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	// "cannot unmarshal string into Go struct field Port.containers.ports.containerPort of type int"
	if i := strings.Index(msg, "into Go struct field "); i >= 0 {
		rest := msg[i+len("into Go struct field "):]
		what := strings.TrimPrefix(msg[:i], "cannot unmarshal ")
		field, typ, _ := strings.Cut(rest, " of type ")
		if dot := strings.Index(field, "."); dot >= 0 {
			field = field[dot+1:]
		}
		return fmt.Sprintf("%s: wrong type: got %s, want %s", field, strings.TrimSpace(what), goTypeName(typ))
	}
	return msg
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"):
		return "integer"
	case t == "string":
		return "string"
	case t == "bool":
		return "boolean"
	case strings.HasPrefix(t, "[]"):
		return "list"
	case strings.HasPrefix(t, "map"):
		return "mapping"
	}
	return "mapping"
}

// podIDOf reads just the id of a manifest that does not decode as a whole.
func podIDOf(raw []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil {
		return ""
	}
	s, _ := v.ID.(string)
	return s
}
