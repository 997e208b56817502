package compose

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	gosync "sync"

	"github.com/compose-spec/compose-go/v2/template"

	"github.com/hostlet/hostlet/manifest"
)

// interpolations records what interpolation made in one load: every
// string a variable went into (as it came out), and every variable's
// value it took. These are the values an error must never show, however
// short (manifest.Sourced.Hidden).
type interpolations struct {
	mu   gosync.Mutex
	made []string
	vars []string
	seen map[string]bool
}

// substitute is strictSubstitute, recording what it made.
func (in *interpolations) substitute(s string, m template.Mapping) (string, error) {
	var took []string
	out, err := strictSubstitute(s, func(name string) (string, bool) {
		v, ok := m(name)
		if ok && v != "" {
			took = append(took, v)
		}
		return v, ok
	})
	if err != nil || len(took) == 0 {
		return out, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.seen == nil {
		in.seen = map[string]bool{}
	}
	if out != "" && !in.seen["m"+out] {
		in.seen["m"+out] = true
		in.made = append(in.made, out)
	}
	for _, v := range took {
		if !in.seen["v"+v] {
			in.seen["v"+v] = true
			in.vars = append(in.vars, v)
		}
	}
	return out, nil
}

// values are every string interpolation made and every value it took.
func (in *interpolations) values() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Concat(in.made, in.vars)
}

// maxHiddenPairs bounds the comparisons of one pod's values with what
// interpolation made; past it, every value of the pod is hidden.
const maxHiddenPairs = 4 << 20

// hide sets s.Hidden and s.HiddenParts: each interpolated string or
// variable's value a value of the pod holds whole (a command line with a
// password in it), and each value that is a part of an interpolated
// string (a parser split "${DEV}" into a host and a container path).
// Letter case is ignored (a capability is upper-cased).
func (in *interpolations) hide(s *manifest.Sourced) {
	s.Hidden, s.HiddenParts = in.hiddenOf(s.Manifest)
}

// hiddenOf returns the wholes and the parts of m that interpolation made:
// nothing but m's own values and parts of them.
func (in *interpolations) hiddenOf(m manifest.Manifest) (wholes, parts []string) {
	in.mu.Lock()
	made, vars := slices.Clone(in.made), slices.Clone(in.vars)
	in.mu.Unlock()
	if len(made) == 0 {
		return nil, nil
	}
	var strs []string
	var nums []int64
	walkValues(reflect.ValueOf(m), func(s string) { strs = append(strs, s) }, func(n int64) { nums = append(nums, n) })
	out, part := map[string]bool{}, map[string]bool{}
	if (len(strs)+len(nums))*(len(made)+len(vars)) > maxHiddenPairs {
		// Too much to compare: hide everything, never nothing.
		for _, s := range strs {
			out[s] = true
		}
		for _, n := range nums {
			part[strconv.FormatInt(n, 10)] = true
		}
		return sortedSet(out), sortedSet(part)
	}
	lowMade := lowered(made)
	for _, s := range strs {
		ls := strings.ToLower(s)
		for i, lm := range lowMade {
			if strings.Contains(lm, ls) {
				part[s] = true
			}
			if strings.Contains(ls, lm) {
				out[made[i]] = true
			}
		}
		for _, v := range vars {
			if len(v) >= minSecret && strings.Contains(ls, strings.ToLower(v)) {
				out[v] = true
			}
		}
	}
	for _, n := range nums {
		d := strconv.FormatInt(n, 10)
		for _, lm := range lowMade {
			if slices.Contains(strings.FieldsFunc(lm, notDigit), d) {
				part[d] = true
			}
		}
	}
	for s := range out {
		delete(part, s)
	}
	return sortedSet(out), sortedSet(part)
}

func notDigit(r rune) bool { return r < '0' || r > '9' }

func lowered(vs []string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.ToLower(v)
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	if len(m) == 0 {
		return nil
	}
	out := make([]string, 0, len(m))
	for s := range m {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// walkValues calls str for every non-empty string and num for every
// number of v (exported fields, elements, map keys and values), file
// contents ([]byte) left out.
func walkValues(v reflect.Value, str func(string), num func(int64)) {
	switch v.Kind() {
	case reflect.String:
		if v.Len() > 0 {
			str(v.String())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		num(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		num(int64(v.Uint() & (1<<63 - 1)))
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkValues(v.Elem(), str, num)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			if t.Field(i).IsExported() {
				walkValues(v.Field(i), str, num)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			walkValues(v.Index(i), str, num)
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			walkValues(it.Key(), str, num)
			walkValues(it.Value(), str, num)
		}
	}
}
