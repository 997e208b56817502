package testkit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// A Step is one step of a Path: a key (string) of a mapping or an index
// (int) of a list.
type Step = any

// A Path names a place in a document decoded as JSON would be
// (map[string]any, []any): containers[0].image is
// Path{"containers", 0, "image"}.
type Path []Step

func (p Path) String() string {
	var b strings.Builder
	for _, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// A Field is a field a hostile value may be put in: its place in the
// document and its Go type.
type Field struct {
	Path Path
	Type reflect.Type
	// Owner and Name are the struct type and the Go field the place
	// stands for (Owner is nil for a key of a map or an item of a list).
	Owner reflect.Type
	Name  string
}

// Fields walks typ (a struct) against doc, a valid document of it (nil
// where the document leaves a part out), and returns every field of every
// struct type reachable from typ, named by tag (json, yaml,
// mapstructure): at each place the document has (every item of a list,
// every key of a map), and once where it has none (a list's item 0, a
// map's key "k"). Fields whose tag is "-" or missing are left out.
func Fields(typ reflect.Type, doc any, tag string) []Field {
	var out []Field
	walkType(typ, doc, nil, tag, &out, map[reflect.Type]int{})
	return out
}

// walkType adds the fields below the place path (of type typ, holding
// doc). seen counts the types on the way down, so that a type that holds
// itself is walked once.
func walkType(typ reflect.Type, doc any, path Path, tag string, out *[]Field, seen map[reflect.Type]int) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch typ.Kind() {
	case reflect.Struct:
		if seen[typ] > 0 {
			return
		}
		seen[typ]++
		defer func() { seen[typ]-- }()
		m, _ := doc.(map[string]any)
		for i := range typ.NumField() {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get(tag), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			p := append(slices.Clip(path), name)
			*out = append(*out, Field{Path: p, Type: f.Type, Owner: typ, Name: f.Name})
			walkType(f.Type, m[name], p, tag, out, seen)
		}
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			return // []byte: a string in the document
		}
		items, _ := doc.([]any)
		if len(items) == 0 {
			items = []any{nil}
		}
		for i, item := range items {
			walkType(typ.Elem(), item, append(slices.Clip(path), i), tag, out, seen)
		}
	case reflect.Map:
		m, _ := doc.(map[string]any)
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range m {
				if !yield(k) {
					return
				}
			}
		})
		if len(keys) == 0 {
			keys = []string{"k"}
		}
		for _, k := range keys {
			walkType(typ.Elem(), m[k], append(slices.Clip(path), k), tag, out, seen)
		}
	}
}

// Set returns doc with v at path, making the mappings and lists on the
// way that doc lacks (a part of another kind is replaced). doc's own
// mappings and lists are copied, never changed.
func Set(doc any, path Path, v any) any {
	if len(path) == 0 {
		return v
	}
	switch step := path[0].(type) {
	case int:
		old, _ := doc.([]any)
		items := make([]any, max(len(old), step+1))
		copy(items, old)
		items[step] = Set(items[step], path[1:], v)
		return items
	default:
		old, _ := doc.(map[string]any)
		m := make(map[string]any, len(old)+1)
		for k, x := range old {
			m[k] = x
		}
		key := fmt.Sprint(step)
		m[key] = Set(m[key], path[1:], v)
		return m
	}
}

// A Hostile is a value put in a field: Value is a document's value
// (string, json.Number, bool, nil, []any, map[string]any).
type Hostile struct {
	Name  string
	Value any
	// Large: the value is huge, long or deep (of HostileSizes), slow to
	// decode; a walk may put it in fewer places.
	Large bool
}

// HostileSizes are the sizes of the large hostile values: Bytes of a
// huge string, Items of a long list or a mapping with many keys, Depth of
// nested lists and mappings.
type HostileSizes struct {
	Bytes, Items, Depth int
}

// Sizes are the large values' sizes of a run: small ones (64 KiB, 5,000
// items, 1,000 levels; a fifth of that under the race detector), which
// still find a loop that never ends and work that grows too fast with the
// input in seconds; with All, large ones.
func Sizes() HostileSizes {
	switch {
	case All():
		return HostileSizes{Bytes: 4 << 20, Items: 200_000, Depth: 9_000}
	case raceDetector:
		return HostileSizes{Bytes: 16 << 10, Items: 1_000, Depth: 200}
	}
	return HostileSizes{Bytes: 64 << 10, Items: 5_000, Depth: 1_000}
}

// BoundedLimit is how long one check of a hostile value may take: 10 s,
// 60 s under the race detector; long enough for a loaded machine, so that
// only a loop that does not end (or work that grows far too fast with the
// input) fails.
func BoundedLimit() time.Duration {
	if raceDetector {
		return time.Minute
	}
	return 10 * time.Second
}

// HostileStrings are strings a field should refuse or survive: empty,
// paths that climb or are the root, NUL, control characters and terminal
// escapes, right-to-left overrides, interpolation and format syntax,
// numbers no integer holds, and huge strings of letters, slashes and
// "../".
func HostileStrings(s HostileSizes) []Hostile {
	return []Hostile{
		{Name: "empty", Value: ""},
		{Name: "root", Value: "/"},
		{Name: "double slash", Value: "//"},
		{Name: "dot-dot", Value: ".."},
		{Name: "climb", Value: "../../../../etc/passwd"},
		{Name: "climb inside", Value: "a/../../b"},
		{Name: "NUL inside", Value: "a\x00b"},
		{Name: "controls", Value: "\x00\x1b[2J\x1b]0;t\x07\r\n\t\b\x7f\u202e"},
		{Name: "newlines", Value: "a\nb: c\n- d"},
		{Name: "invalid UTF-8", Value: "\xff\xfe\xc0"},
		{Name: "interpolation", Value: "${HOME}$$HOME{{.Hostname}}"},
		{Name: "huge number", Value: strings.Repeat("9", 400)},
		{Name: "huge", Value: strings.Repeat("a", s.Bytes), Large: true},
		{Name: "huge slashes", Value: strings.Repeat("/", s.Bytes), Large: true},
		{Name: "huge climb", Value: strings.Repeat("../", s.Bytes/3), Large: true},
		{Name: "huge path", Value: strings.Repeat("a/", s.Bytes/2), Large: true},
		{Name: "huge controls", Value: strings.Repeat("\x1b\x00\n", s.Bytes/3), Large: true},
	}
}

// HostileNumbers are numbers at and past every integer's ends.
func HostileNumbers() []Hostile {
	return []Hostile{
		{Name: "zero", Value: json.Number("0")},
		{Name: "-1", Value: json.Number("-1")},
		{Name: "min int64", Value: json.Number(strconv.FormatInt(-1<<63, 10))},
		{Name: "max int64", Value: json.Number(strconv.FormatInt(1<<63-1, 10))},
		{Name: "2^64", Value: json.Number("18446744073709551616")},
		{Name: "huge integer", Value: json.Number("1" + strings.Repeat("0", 400))},
		{Name: "1e999", Value: json.Number("1e999")},
		{Name: "fraction", Value: json.Number("1.5")},
	}
}

// HostileShapes are values of the wrong kind or of huge size or depth,
// for any field: null, empty and wrong-kind values, a long list, a
// mapping with many keys (hostile ones among them), and nested lists and
// mappings.
func HostileShapes(s HostileSizes) []Hostile {
	long := make([]any, s.Items)
	for i := range long {
		long[i] = "a"
	}
	many := make(map[string]any, s.Items)
	for i := range s.Items {
		many["k"+strconv.Itoa(i)] = "v"
	}
	for _, h := range HostileStrings(HostileSizes{Bytes: 1 << 10}) {
		many[h.Value.(string)] = h.Value
	}
	var deepList, deepMap any = "a", "a"
	for range s.Depth {
		deepList = []any{deepList}
		deepMap = map[string]any{"a": deepMap}
	}
	return []Hostile{
		{Name: "null", Value: nil},
		{Name: "true", Value: true},
		{Name: "wrong kind", Value: []any{json.Number("1"), "x", map[string]any{"x": nil}}},
		{Name: "empty list", Value: []any{}},
		{Name: "empty mapping", Value: map[string]any{}},
		{Name: "long list", Value: long, Large: true},
		{Name: "many keys", Value: many, Large: true},
		{Name: "deep lists", Value: deepList, Large: true},
		{Name: "deep mappings", Value: deepMap, Large: true},
	}
}

// HostileSet are the hostile values of one size, made once.
type HostileSet struct {
	strings, numbers, shapes []Hostile
}

func hostileValues(s HostileSizes) HostileSet {
	return HostileSet{strings: HostileStrings(s), numbers: HostileNumbers(), shapes: HostileShapes(s)}
}

// HostileFor is every hostile value for a field of type typ: its kind's
// values (strings for a string or []byte, numbers for a number), then
// the shapes. A list of strings also gets the hostile strings as items
// (the small ones together, each large one alone), and a map as keys and
// as values.
func HostileFor(typ reflect.Type, s HostileSizes) []Hostile {
	return hostileValues(s).For(typ)
}

// For is HostileFor of the set's values.
func (hs HostileSet) For(typ reflect.Type) []Hostile {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	var out []Hostile
	switch typ.Kind() {
	case reflect.String:
		out = append(out, hs.strings...)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		out = append(out, hs.numbers...)
		if typ.String() == "time.Duration" {
			out = append(out, Hostile{Name: "huge duration", Value: "9999999999999999999h"}, Hostile{Name: "negative duration", Value: "-1s"})
		}
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			out = append(out, hs.strings...)
			break
		}
		if typ.Elem().Kind() == reflect.String {
			out = append(out, hs.items()...)
		}
	case reflect.Map:
		out = append(out, hs.keysAndValues()...)
	}
	return append(out, hs.shapes...)
}

// items are lists of the hostile strings: the small ones together, each
// large one alone.
func (hs HostileSet) items() []Hostile {
	var out []Hostile
	var small []any
	for _, h := range hs.strings {
		if h.Large {
			out = append(out, Hostile{Name: "item " + h.Name, Value: []any{h.Value}, Large: true})
		} else {
			small = append(small, h.Value)
		}
	}
	return append(out, Hostile{Name: "hostile items", Value: small})
}

// keysAndValues are mappings with the hostile strings as keys and as
// values: the small ones together, each large one alone.
func (hs HostileSet) keysAndValues() []Hostile {
	var out []Hostile
	keys, values := map[string]any{}, map[string]any{}
	for i, h := range hs.strings {
		if h.Large {
			out = append(out,
				Hostile{Name: "key " + h.Name, Value: map[string]any{h.Value.(string): "v"}, Large: true},
				Hostile{Name: "value " + h.Name, Value: map[string]any{"k": h.Value}, Large: true})
			continue
		}
		keys[h.Value.(string)] = "v"
		values["k"+strconv.Itoa(i)] = h.Value
	}
	return append(out, Hostile{Name: "hostile keys", Value: keys}, Hostile{Name: "hostile values", Value: values})
}

// Bounded runs fn in a goroutine of its own and fails t when fn panics or
// has not returned within limit; it reports whether fn returned (a fn
// that did not is left running: the caller should stop, as the test
// failed).
func Bounded(t testing.TB, limit time.Duration, what string, fn func()) bool {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		fn()
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case p := <-done:
		if p != nil {
			t.Errorf("%s: panic: %v", what, p)
		}
		return true
	case <-timer.C:
		t.Errorf("%s: has not returned after %s", what, limit)
		return false
	}
}

// A Case is one hostile value in one place.
type Case struct {
	Path    Path
	Hostile Hostile
}

func (c Case) String() string { return c.Path.String() + " = " + c.Hostile.Name }

// Cases are the hostile values for fields (of Fields(typ, base, tag)),
// Sample of them in each place, and where base holds a list, a long list
// of copies of its first item.
func Cases(base any, fields []Field, sizes HostileSizes) []Case {
	SortFields(fields)
	values := hostileValues(sizes)
	var cases []Case
	for i, f := range fields {
		for _, h := range Sample(i, append(values.For(f.Type), Copies(base, f.Path, sizes)...)) {
			cases = append(cases, Case{Path: f.Path, Hostile: h})
		}
	}
	return cases
}

// AllEnv is the environment variable that makes a walk put every hostile
// value in every place, at the largest sizes (HOSTLET_HOSTILE=all): a
// long run, minutes rather than seconds.
const AllEnv = "HOSTLET_HOSTILE"

// All reports whether this run walks every hostile value in every place.
func All() bool { return os.Getenv(AllEnv) == "all" }

// Sample is the hostile values (of values) a walk puts in its place'th
// place: all of them when All, else those of everywhere and two more,
// taken in turn from the others place by place, so that every value is
// put somewhere in a walk of enough places.
func Sample(place int, values []Hostile) []Hostile {
	if All() {
		return values
	}
	var out, rest []Hostile
	for _, h := range values {
		if everywhere[h.Name] {
			out = append(out, h)
		} else {
			rest = append(rest, h)
		}
	}
	for j := range min(2, len(rest)) {
		out = append(out, rest[(2*place+j)%len(rest)])
	}
	return out
}

// everywhere are the hostile values a walk puts in every place: the root
// path and control characters (written, or interpolated from the host's
// values), which loops over paths and text meet first, and a value of the
// wrong kind.
var everywhere = map[string]bool{
	"root": true, "controls": true, "interpolated controls": true, "wrong kind": true,
	"hostile items": true, "hostile keys": true, "hostile values": true,
}

// Copies is, where doc holds a non-empty list at path, a large hostile
// value: a long list of copies of its first item (none otherwise).
func Copies(doc any, path Path, sizes HostileSizes) []Hostile {
	items, ok := Lookup(doc, path).([]any)
	if !ok || len(items) == 0 {
		return nil
	}
	copies := make([]any, sizes.Items/10)
	for i := range copies {
		copies[i] = items[0]
	}
	return []Hostile{{Name: "copies of the first item", Value: copies, Large: true}}
}

// Lookup is the value of doc at path (nil when there is none).
func Lookup(doc any, path Path) any {
	for _, step := range path {
		switch s := step.(type) {
		case int:
			items, _ := doc.([]any)
			if s >= len(items) {
				return nil
			}
			doc = items[s]
		default:
			m, _ := doc.(map[string]any)
			doc = m[fmt.Sprint(s)]
		}
	}
	return doc
}

// Doc decodes a YAML document as a JSON decoder would (numbers as
// json.Number), to be the base of a walk.
func Doc(t testing.TB, text string) any {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// RunBounded runs check on every case, on as many workers as there are
// CPUs (each with a folder of its own, made ready by prepare), each call
// bounded by limit (see Bounded); it stops at the first call that does
// not return.
func RunBounded(t *testing.T, limit time.Duration, cases []Case, prepare func(dir string), check func(c Case, dir string)) {
	t.Helper()
	work := make(chan Case)
	stop := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		dir := t.TempDir()
		prepare(dir)
		wg.Go(func() {
			for c := range work {
				if !Bounded(t, limit, c.String(), func() { check(c, dir) }) {
					once.Do(func() { close(stop) })
					return
				}
			}
		})
	}
feed:
	for _, c := range cases {
		select {
		case work <- c:
		case <-stop:
			break feed
		}
	}
	close(work)
	wg.Wait()
}

// FieldCount is how many distinct struct fields (Owner.Name) fields
// name, and the struct types they belong to.
func FieldCount(fields []Field) (types, names int) {
	owners := map[reflect.Type]bool{}
	seen := map[string]bool{}
	for _, f := range fields {
		if f.Owner == nil {
			continue
		}
		owners[f.Owner] = true
		seen[f.Owner.String()+"."+f.Name] = true
	}
	return len(owners), len(seen)
}

// SortFields orders fields by path text, for stable runs.
func SortFields(fields []Field) {
	slices.SortStableFunc(fields, func(a, b Field) int { return cmp.Compare(a.Path.String(), b.Path.String()) })
}
