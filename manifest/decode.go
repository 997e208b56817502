package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-multierror"
	yaml2 "go.yaml.in/yaml/v2"
	kjson "sigs.k8s.io/json"

	"github.com/hostlet/hostlet/internal/textcap"
)

// MaxSize is the largest file or body hostlet reads from any source.
const MaxSize = 10 << 20

// MaxFileErrors bounds the errors Decode returns for one file; the ones
// past it are counted in one last error ("... and N more errors in this
// file"). Each manifest also reports at most 100 field problems.
const MaxFileErrors = 100

// ErrTooLarge is returned (wrapped) for input over the size limit.
var ErrTooLarge = errors.New("larger than the size limit")

// ReadLimited reads r up to limit bytes and fails, without reading further,
// when r holds more.
func ReadLimited(r io.Reader, limit int64) ([]byte, error) {
	data, err := readAllSized(io.LimitReader(r, limit+1), sizeHint(r, limit))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w of %d bytes", ErrTooLarge, limit)
	}
	return data, nil
}

// sizeHint is what ReadLimited allocates first: a regular file's size
// (and room to see its end), so that a 10 MiB file takes 10 MiB, not the
// 26 MiB io.ReadAll's doublings leave behind.
func sizeHint(r io.Reader, limit int64) int {
	const small = 512
	f, ok := r.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return small
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return small
	}
	return int(min(fi.Size(), limit)) + small
}

// readAllSized is io.ReadAll starting from a buffer of size bytes.
func readAllSized(r io.Reader, size int) ([]byte, error) {
	data := make([]byte, 0, size)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
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
// or several YAML documents separated by "---", in YAML or JSON. origin.Index
// is set per manifest: documents and list items are numbered in order from 0.
//
// The returned error, if any, is a *multierror.Error of *Error values (or
// one *Error for a file over MaxSize or not text); the manifests decoded
// are returned alongside it. A manifest with unknown or duplicate fields
// (field names are case-sensitive) is returned with them in its Errors: it
// is invalid, and validation reports them with the rest, under its id. A
// manifest that does not decode (a value of the wrong type, not a mapping,
// a mapping with unknown fields and neither version nor id) is not
// returned; its errors are in the returned error.
func Decode(data []byte, origin Origin) ([]Sourced, error) {
	if len(data) > MaxSize {
		return nil, &Error{Origin: origin, Detail: fmt.Sprintf("%d bytes: %v of %d bytes", len(data), ErrTooLarge, MaxSize), Err: ErrTooLarge}
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return nil, &Error{Origin: origin, Detail: "not a text file (binary data or invalid UTF-8)"}
	}
	// Nothing is decoded from a file whose structure alone could take
	// more memory than the bound allows.
	if err := CheckStructure(data, MaxFileMarks, "file"); err != nil {
		return nil, &Error{Origin: origin, Detail: err.Error(), Err: ErrTooComplex}
	}
	var (
		out  []Sourced
		errs = fileErrors{origin: origin}
	)
	index, docNum := 0, 0
	for doc := range documents(data) {
		docNum++
		if docNum > MaxFileManifests {
			return nil, tooManyInFile(origin)
		}
		items, err := documentItems(doc)
		if err != nil {
			errs.add(&Error{Origin: origin, Detail: fmt.Sprintf("document %d: %v", docNum, err)})
			continue
		}
		if index+len(items) > MaxFileManifests {
			return nil, tooManyInFile(origin)
		}
		decoded := expandKubeLists(items, &errs, origin, docNum)
		if index+len(decoded) > MaxFileManifests {
			return nil, tooManyInFile(origin)
		}
		for _, it := range decoded {
			o := origin
			o.Index = index
			index++
			if it.kube != nil {
				out = append(out, Sourced{Origin: o, Kube: it.kube})
				continue
			}
			m, strict, err := decodeOne(it.raw, o)
			if err != nil {
				errs.add(err)
				continue
			}
			forgetBuildInputs(&m)
			forgetSealed(&m)
			// Only a translation names a pod's Kubernetes object.
			m.Object = nil
			strict = append(strict, ReservedText(m, o)...)
			out = append(out, Sourced{Origin: o, Manifest: m, Errors: strict})
		}
	}
	if index == 0 && errs.errs == nil {
		errs.add(&Error{Origin: origin, Detail: "no manifest found (the file is empty, or holds only comments or an empty list)"})
	}
	return out, errs.result()
}

// item is one document item: a hostlet manifest's JSON, or a Kubernetes
// object (read once, here).
type item struct {
	raw  []byte
	kube *KubeObject
}

// expandKubeLists reads which items are Kubernetes objects and replaces
// each "v1 List" of them by its items (one level: a List in a List is an
// object the translation refuses), adding an error for one whose items
// cannot be read.
func expandKubeLists(raws [][]byte, errs *fileErrors, origin Origin, docNum int) []item {
	var out []item
	for _, raw := range raws {
		k := kubeObjectOf(raw)
		listed, ok, err := kubeListItems(k)
		switch {
		case !ok:
			out = append(out, item{raw: raw, kube: k})
		case err != nil:
			errs.add(&Error{Origin: origin, Detail: fmt.Sprintf("document %d: %v", docNum, err)})
		default:
			for _, l := range listed {
				out = append(out, item{raw: l, kube: kubeObjectOf(l)})
			}
		}
	}
	return out
}

// fileErrors collects the errors of one file, up to MaxFileErrors.
type fileErrors struct {
	origin Origin
	errs   *multierror.Error
	more   int
}

// add adds err, or each error of a *multierror.Error.
func (f *fileErrors) add(err error) {
	list := []error{err}
	if merr, ok := err.(*multierror.Error); ok {
		list = merr.Errors
	}
	for _, e := range list {
		if f.errs != nil && len(f.errs.Errors) >= MaxFileErrors {
			f.more++
			continue
		}
		f.errs = multierror.Append(f.errs, e)
	}
}

// result returns the errors, with one last error counting those left out.
func (f *fileErrors) result() error {
	if f.more > 0 {
		f.errs = multierror.Append(f.errs, &Error{Origin: f.origin, Detail: fmt.Sprintf("... and %d more errors in this file", f.more)})
	}
	return f.errs.ErrorOrNil()
}

// document is one YAML document of a file: its text and the number of
// lines of the file before it, to report YAML errors at file line numbers.
type document struct {
	text []byte
	line int
}

// documents yields the YAML documents of data, in order, as parts of it. A
// line starting with the document marker "---" (alone, or followed by a
// space and more) starts a new document and stays in it, as YAML allows
// content after the marker; a line holding only the end marker "..." ends
// one. Without the split, the YAML decoder would read only the first
// document and silently drop the rest. Blank and comment lines before the
// first marker are no document.
func documents(data []byte) iter.Seq[document] {
	return func(yield func(document) bool) {
		var (
			cur   document // text is data[start:pos] once complete
			start int
			first = true
		)
		emit := func(end int) bool {
			cur.text = data[start:end]
			if first && blank(cur.text) {
				first = false
				return true
			}
			first = false
			return yield(cur)
		}
		for pos, line := 0, 0; pos < len(data); line++ {
			end := len(data)
			if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
				end = pos + i + 1
			}
			switch text := data[pos:end]; {
			case isDocumentStart(text):
				if !emit(pos) {
					return
				}
				start, cur = pos, document{line: line}
			case isDocumentEnd(text):
				if !emit(pos) {
					return
				}
				start, cur = end, document{line: line + 1}
			}
			pos = end
		}
		if start < len(data) || first {
			cur.text = data[start:]
			yield(cur)
		}
	}
}

// isDocumentStart reports whether text starts with the YAML marker "---"
// (followed by the end of the line, a space or a tab).
func isDocumentStart(text []byte) bool {
	rest, ok := bytes.CutPrefix(text, []byte("---"))
	return ok && (len(rest) == 0 || bytes.IndexByte([]byte(" \t\r\n"), rest[0]) >= 0)
}

// isDocumentEnd reports whether line is the YAML marker "..." (with an
// optional comment).
func isDocumentEnd(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("..."))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

// blank reports whether text holds only blank and comment lines.
func blank(text []byte) bool {
	for line := range bytes.Lines(text) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// documentBody returns the document's text without its "---" marker, to
// tell whether it is plain JSON.
func documentBody(doc []byte) []byte {
	if isDocumentStart(doc) {
		doc = doc[3:]
	}
	return bytes.TrimSpace(doc)
}

// documentItems turns one YAML/JSON document into the JSON of each manifest
// it holds: none for an empty document, one for an object, each element of a
// list.
//
// A document that is valid JSON is read as JSON: YAML 1.1 rejects some
// valid JSON (e.g. raw C1 control characters in strings), and a manifest
// written out with encoding/json must read back as it was.
func documentItems(doc document) ([][]byte, error) {
	js := documentBody(doc.text)
	if len(js) == 0 {
		return nil, nil
	}
	if (js[0] != '{' && js[0] != '[') || !json.Valid(js) {
		if len(doc.text) > MaxYAMLDocument {
			return nil, fmt.Errorf("%d bytes of YAML, more than the %d a YAML document may hold: %w; split it into documents (---) or files, or write it as JSON", len(doc.text), MaxYAMLDocument, ErrTooLarge)
		}
		if err := checkAliases(doc.text); err != nil {
			return nil, err
		}
		var err error
		js, err = yamlToJSON(doc.text)
		if err != nil {
			return nil, fmt.Errorf("not valid YAML or JSON: %s", cleanYAMLError(err, doc.line))
		}
		js = bytes.TrimSpace(js)
		if err := afterFlowRoot(doc); err != nil {
			return nil, err
		}
	}
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

// afterFlowRoot returns an error when the document holds more than its
// root value: the YAML decoder reads one value per document and ignores
// whatever follows a flow mapping or list, so NDJSON (one JSON object a
// line) or "{...} {...}" would lose every manifest but the first without a
// word. Only a document whose root is a flow collection can end early (a
// block mapping or list runs to the end of the document, or fails); for
// those the YAML decoder itself, asked for a second value, says whether
// anything follows, and flowEnd finds the line to report.
func afterFlowRoot(doc document) error {
	start := flowRoot(doc.text)
	if start < 0 || !moreThanOneValue(doc.text) {
		return nil
	}
	what := "manifest"
	if doc.text[start] == '[' {
		what = "list of manifests"
	}
	const hint = "separate manifests with --- or put them in a list"
	if end := flowEnd(doc.text, start); end >= 0 {
		if at := nextContent(doc.text, end); at >= 0 {
			line := doc.line + bytes.Count(doc.text[:at], []byte("\n")) + 1
			return fmt.Errorf("unexpected content at line %d after the %s; %s", line, what, hint)
		}
	}
	return fmt.Errorf("unexpected content after the %s; %s", what, hint)
}

// moreThanOneValue reports whether the YAML decoder finds anything after
// the first value of text (a document that decodes).
func moreThanOneValue(text []byte) (more bool) {
	defer func() {
		if recover() != nil {
			more = true
		}
	}()
	dec := yaml2.NewDecoder(bytes.NewReader(text))
	var v skipValue
	if err := dec.Decode(&v); err != nil {
		return false
	}
	return dec.Decode(&v) != io.EOF
}

// skipValue decodes nothing: the parse alone says where a value ends.
type skipValue struct{}

// UnmarshalYAML implements yaml.Unmarshaler.
func (*skipValue) UnmarshalYAML(func(any) error) error { return nil }

// flowRoot returns the offset of the '{' or '[' that starts the document's
// root value, past a "---" marker, comments and node properties (a tag
// or an anchor); -1 when the root is not a flow collection.
func flowRoot(text []byte) int {
	i := 0
	if isDocumentStart(text) {
		i = 3
	}
	for i < len(text) {
		switch c := text[i]; {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
		case c == '#':
			i = lineEnd(text, i)
		case c == '!' || c == '&':
			for i < len(text) && !isBlank(text[i]) {
				i++
			}
		case c == '{' || c == '[':
			return i
		default:
			return -1
		}
	}
	return -1
}

// flowEnd returns the offset just past the flow collection whose '{' or
// '[' is at text[start], or -1 when it does not end: brackets are counted
// outside quoted scalars and comments. A quote starts a quoted scalar only
// where a value starts (after a bracket, a comma, a ':' or '?' indicator,
// or a node property); inside a plain scalar it is a character like others.
// A '#' opens a comment where the YAML decoder's scanner is between
// tokens: after a blank, as the YAML spec has it, but also right after an
// indicator or a quoted scalar ("{#}" is "{" and a comment).
func flowEnd(text []byte, start int) int {
	depth := 0
	atValue := true
	// between: text[i] starts a token (the one before it ended).
	between := true
	for i := start; i < len(text); i++ {
		c := text[i]
		tokenStart := between
		between = true
		switch {
		case c == '#' && tokenStart:
			i = lineEnd(text, i) - 1
		case c == '{' || c == '[':
			depth++
			atValue = true
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			atValue = false
		case c == ',' || c == ':' || c == '?':
			atValue = true
		case isBlank(c):
		case (c == '"' || c == '\'') && atValue:
			i = quotedEnd(text, i)
			if i < 0 {
				return -1
			}
			atValue = false
		case (c == '!' || c == '&') && atValue:
			for i+1 < len(text) && !isBlank(text[i+1]) && bytes.IndexByte([]byte(",[]{}"), text[i+1]) < 0 {
				i++
			}
			between = false
		default:
			atValue, between = false, false
		}
	}
	return -1
}

// quotedEnd returns the offset of the quote that closes the quoted scalar
// opened at text[start], or -1.
func quotedEnd(text []byte, start int) int {
	q := text[start]
	for i := start + 1; i < len(text); i++ {
		switch {
		case q == '"' && text[i] == '\\':
			i++
		case text[i] == q && q == '\'' && i+1 < len(text) && text[i+1] == '\'':
			i++
		case text[i] == q:
			return i
		}
	}
	return -1
}

// nextContent returns the offset of the first character from i on that is
// neither blank nor in a comment, or -1.
func nextContent(text []byte, i int) int {
	for i < len(text) {
		switch {
		case isBlank(text[i]):
			i++
		case text[i] == '#':
			i = lineEnd(text, i)
		default:
			return i
		}
	}
	return -1
}

// lineEnd returns the offset of the end of the line holding text[i].
func lineEnd(text []byte, i int) int {
	if j := bytes.IndexByte(text[i:], '\n'); j >= 0 {
		return i + j
	}
	return len(text)
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// jsonRaw keeps one list element undecoded.
type jsonRaw []byte

// UnmarshalJSON implements json.Unmarshaler.
func (r *jsonRaw) UnmarshalJSON(b []byte) error {
	*r = bytes.Clone(b)
	return nil
}

func describeJSON(js []byte) string {
	if len(js) == 0 {
		return "nothing"
	}
	switch js[0] {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null (an empty item)"
	case '[':
		return "a list"
	case '{':
		return "a mapping"
	default:
		return "a number"
	}
}

var (
	yamlLineRE      = regexp.MustCompile(`\bline (\d+)`)
	yamlDuplicateRE = regexp.MustCompile(`key (.*?) already set in map`)
)

// cleanYAMLError turns a YAML error into one line: without the library's
// prefixes, its parts joined with "; ", duplicate keys named as such, and
// line numbers counted from the start of the file, not of the document
// (the file's first `offset` lines are in earlier documents).
func cleanYAMLError(err error, offset int) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	var parts []string
	for _, p := range strings.Split(msg, "\n") {
		p = strings.TrimSpace(p)
		if p == "" || p == "unmarshal errors:" {
			continue
		}
		parts = append(parts, p)
	}
	msg = strings.Join(parts, "; ")
	msg = yamlDuplicateRE.ReplaceAllStringFunc(msg, func(m string) string {
		key := yamlDuplicateRE.FindStringSubmatch(m)[1]
		return "duplicate key " + textcap.Excerpt(key)
	})
	return yamlLineRE.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+offset)
	})
}

// decodeOne decodes one manifest strictly. A value of the wrong type stops
// it: err then lists every unknown or duplicate field and wrong type, each
// with its field path and the pod's id when it could be read. Unknown and
// duplicate fields alone do not, in a manifest with a version or an id: it
// is returned with them in strict, and validation rejects it with its
// other errors.
// forgetBuildInputs drops what a manifest's author wrote in the fields of
// its builds that hostlet fills in (Files, Recipe, Image): only a source
// that reads the build's context from its files sets them (a file or git
// source, after decoding), so a source without files (HTTP, etcd, push)
// has no build, whatever it writes.
func forgetBuildInputs(m *Manifest) {
	for i := range m.Containers {
		if b := m.Containers[i].Build; b != nil {
			b.Files, b.Recipe, b.Image = nil, "", ""
		}
	}
}

func decodeOne(raw []byte, origin Origin) (m Manifest, strict []*Error, err error) {
	if len(raw) == 0 || raw[0] != '{' {
		return m, nil, &Error{Origin: origin, Detail: fmt.Sprintf("manifest %d: expected a mapping, found %s", origin.Index+1, describeJSON(raw))}
	}
	strictErrs, err := kjson.UnmarshalStrict(raw, &m)
	if err == nil && len(strictErrs) == 0 {
		return m, nil, nil
	}
	pod := podIDOf(raw)
	for _, p := range fieldProblems(raw) {
		strict = append(strict, &Error{Origin: origin, Pod: pod, Field: p.field, Detail: p.detail})
	}
	if len(strict) == 0 {
		// Not expected: the walk finds every problem the decoder does.
		if err != nil {
			strict = append(strict, &Error{Origin: origin, Pod: pod, Detail: typeErrorDetail(err)})
		}
		for _, s := range strictErrs {
			field, detail := "", s.Error()
			var fe kjson.FieldError
			if errors.As(s, &fe) {
				field = strings.TrimPrefix(fe.FieldPath(), ".")
				detail = strictDetail(s.Error())
			}
			strict = append(strict, &Error{Origin: origin, Pod: pod, Field: field, Detail: detail})
		}
	}
	// Unknown fields and no version or id: nothing of a manifest was
	// read, the document is something else (say, the body of an error
	// page). That fails the file, like a value of the wrong type, rather
	// than making an invalid pod.
	if err != nil || m.Version == "" && m.ID == "" {
		var errs *multierror.Error
		for _, e := range strict {
			errs = multierror.Append(errs, e)
		}
		return Manifest{}, nil, errs
	}
	return m, strict, nil
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
