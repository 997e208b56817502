package kube

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// finding is one field of an object that is accepted or refused: its
// path (spec.containers[0].lifecycle) and its rule.
type finding struct {
	path string
	rule rule
}

// fieldWalk walks every field an object sets (every field whose value
// is not Go's zero value) along its Go type, and sorts each by the rule
// of its path's pattern: nothing set goes unseen. A field without a rule
// is refused.
type fieldWalk struct {
	rules      func(pattern string) (rule, bool)
	refused    []finding
	accepted   []finding
	translated []string
}

// walkFields walks v (a struct) with rules, from path prefix.
func walkFields(v any, rules func(string) (rule, bool)) *fieldWalk {
	w := &fieldWalk{rules: rules}
	w.structFields(reflect.ValueOf(v), "", "")
	return w
}

var marshaler = reflect.TypeFor[json.Marshaler]()

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// structFields walks the fields of struct v, embedded ones (json:"" or
// ",inline") as the struct's own.
func (w *fieldWalk) structFields(v reflect.Value, path, pattern string) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fv := v.Field(i)
		switch {
		case name == "-" || fv.IsZero():
			continue
		case name == "" && f.Anonymous:
			w.structFields(fv, path, pattern)
			continue
		case name == "":
			name = f.Name
		}
		w.field(fv, join(path, name), join(pattern, name))
	}
}

// field sorts one field set, and walks into it when it is translated
// and has fields of its own.
func (w *fieldWalk) field(v reflect.Value, path, pattern string) {
	r, ok := w.rules(pattern)
	if !ok {
		r = refuse("not supported by hostlet")
	}
	switch r.do {
	case refused:
		w.refused = append(w.refused, finding{path: path, rule: r})
		return
	case accepted:
		w.accepted = append(w.accepted, finding{path: path, rule: r})
		return
	case translatedWhole:
		w.translated = append(w.translated, pattern)
		return
	}
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	switch {
	case isStruct(v.Type()):
		w.structFields(v, path, pattern)
	case v.Kind() == reflect.Slice && isStruct(elemType(v.Type())):
		for i := range v.Len() {
			w.structFields(v.Index(i), path+"["+strconv.Itoa(i)+"]", pattern+"[]")
		}
	default:
		w.translated = append(w.translated, pattern)
	}
}

// isStruct reports whether t is a struct with fields to walk: not one
// that writes itself as one JSON value (a quantity, an int-or-string, a
// time).
func isStruct(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Struct && !t.Implements(marshaler) && !reflect.PointerTo(t).Implements(marshaler)
}

func elemType(t reflect.Type) reflect.Type {
	t = t.Elem()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
