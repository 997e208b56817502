package project

import (
	"reflect"
	"slices"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// bundleKeyCovers are the fields of the types a bundle is made of, as
// bundleKey reads them: a field added to one of them must be added to
// the key (or here, saying why the helper does not see it), or a render
// of a bundle differing only by it is taken from the cache.
var bundleKeyCovers = map[reflect.Type][]string{
	reflect.TypeFor[Bundle]():  {"Options", "Body", "Files", "Kube"},
	reflect.TypeFor[Options](): {"Source", "Dir", "Name", "File", "Host"},
	reflect.TypeFor[Host]():    {"Env", "Profiles", "Home", "HomeIsGuess"},
	reflect.TypeFor[File]():    {"Data", "Err", "Exec"},
}

// Every field of a bundle is known to its cache key, and a value set in
// any one of them (the rest as in a base bundle) changes the key: no
// render is kept for a bundle the helper would see otherwise.
func TestBundleKeyCoversEveryField(t *testing.T) {
	for typ, want := range bundleKeyCovers {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has fields %v; bundleKey covers %v: add the new one to the key and to bundleKeyCovers", typ, got, want)
		}
	}
	base := func() Bundle {
		return Bundle{Options: Options{Source: "s", Dir: "d", Name: "n"},
			Files: map[string]File{"compose.yaml": {Data: []byte("services: {}\n")}}}
	}
	baseKey, err := bundleKey(base())
	if err != nil {
		t.Fatal(err)
	}
	// Each field in turn: through the bundle, then its options, host and
	// one file.
	check := func(path string, change func(*Bundle)) {
		b := base()
		change(&b)
		key, err := bundleKey(b)
		if err != nil {
			t.Fatal(err)
		}
		if key == baseKey {
			t.Errorf("%s set: the key of the base bundle", path)
		}
	}
	setEach := func(prefix string, v reflect.Value, apply func(*Bundle, func(reflect.Value))) {
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			if v.Type().Field(i).Anonymous {
				continue // an embedded struct: its fields are checked on their own
			}
			check(prefix+name, func(b *Bundle) {
				apply(b, func(s reflect.Value) { setNonZero(t, s.Field(i)) })
			})
		}
	}
	setEach("Bundle.", reflect.ValueOf(Bundle{}), func(b *Bundle, set func(reflect.Value)) { set(reflect.ValueOf(b).Elem()) })
	setEach("Options.", reflect.ValueOf(Options{}), func(b *Bundle, set func(reflect.Value)) { set(reflect.ValueOf(&b.Options).Elem()) })
	setEach("Host.", reflect.ValueOf(Host{}), func(b *Bundle, set func(reflect.Value)) { set(reflect.ValueOf(&b.Options.Host).Elem()) })
	setEach("File.", reflect.ValueOf(File{}), func(b *Bundle, set func(reflect.Value)) {
		f := b.Files["compose.yaml"]
		set(reflect.ValueOf(&f).Elem())
		b.Files["compose.yaml"] = f
	})
}

// setNonZero sets v to a value other than the base bundle's, whatever its
// kind.
func setNonZero(t *testing.T, v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		switch v.Type().Elem().Kind() {
		case reflect.Uint8:
			v.SetBytes(append(slices.Clone(v.Bytes()), 'x'))
		case reflect.String:
			v.Set(reflect.Append(v, reflect.ValueOf("x")))
		case reflect.Struct:
			e := reflect.New(v.Type().Elem()).Elem()
			if e.Type() == reflect.TypeFor[manifest.Sourced]() {
				e.Set(reflect.ValueOf(manifest.Sourced{Kube: &manifest.KubeObject{APIVersion: "v1", Kind: "Pod", Raw: []byte(`{}`)}}))
			}
			v.Set(reflect.Append(v, e))
		default:
			t.Fatalf("no value to set a %s to", v.Type())
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for _, k := range v.MapKeys() {
			m.SetMapIndex(k, v.MapIndex(k))
		}
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		setNonZero(t, k)
		if e.Kind() == reflect.Struct {
			setNonZero(t, e.Field(0))
		} else {
			setNonZero(t, e)
		}
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		setNonZero(t, v.Field(0))
	default:
		t.Fatalf("no value to set a %s to", v.Type())
	}
}

// The parts of the key are delimited by their lengths: a byte moved from
// one part to the next (a name into its data, a body into the options,
// one file's data into the next file's name) makes another key.
func TestBundleKeyPartsDoNotRunIntoEachOther(t *testing.T) {
	bundles := map[string]Bundle{
		"name ab, data c":   {Files: map[string]File{"ab": {Data: []byte("c")}}},
		"name a, data bc":   {Files: map[string]File{"a": {Data: []byte("bc")}}},
		"name a, err b":     {Files: map[string]File{"a": {Err: "b"}}},
		"name ab":           {Files: map[string]File{"ab": {}}},
		"name a, data b":    {Files: map[string]File{"a": {Data: []byte("b")}}},
		"two files":         {Files: map[string]File{"a": {Data: []byte("b")}, "c": {}}},
		"one file, data bc": {Files: map[string]File{"a": {Data: []byte("b\x00\x00\x00\x00\x00\x00\x00\x01c")}}},
		"body":              {Body: []byte("x")},
		"no body":           {},
		"empty file":        {Files: map[string]File{"": {}}},
		"exec":              {Files: map[string]File{"": {Exec: true}}},
	}
	seen := map[[32]byte]string{}
	for name, b := range bundles {
		key, err := bundleKey(b)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[key]; dup {
			t.Errorf("%s and %s: one key", name, prev)
		}
		seen[key] = name
	}
	// Nil and empty are one to the helper (JSON omits both): one key.
	for _, pair := range [][2]Bundle{
		{{Body: nil}, {Body: []byte{}}},
		{{Files: nil}, {Files: map[string]File{}}},
		{{Files: map[string]File{"a": {Data: nil}}}, {Files: map[string]File{"a": {Data: []byte{}}}}},
	} {
		a, _ := bundleKey(pair[0])
		b, _ := bundleKey(pair[1])
		if a != b {
			t.Errorf("%+v and %+v, one request to the helper, have two keys", pair[0], pair[1])
		}
	}
}

// A result of a kept render is the caller's to change: its errors, keys,
// hidden values, volumes and containers (appended to, cut, edited) do
// not reach the next result; only the files are shared.
func TestKeptRenderResultsShareNothingButTheFiles(t *testing.T) {
	resp := keptAnswer(16)
	resp.Manifests[0].Keys = map[string]string{"containers[0].image": "services.web.image"}
	resp.Manifests[0].Hidden = []string{"secret-ish"}
	resp.Manifests[0].HiddenParts = []string{"part"}
	resp.Manifests[0].Manifest.Containers[0].Build.ExtraHosts = []string{"h:1.2.3.4"}
	resp.Errors = []*manifest.Error{{Field: "services.web", Detail: "one"}}
	kept := freeze(resp)
	first, err := kept.result()
	if err == nil {
		t.Fatal("the kept render's errors were not returned")
	}
	s := &first[0]
	s.Keys["containers[0].image"] = "x"
	s.Hidden[0], s.HiddenParts[0] = "x", "x"
	s.Manifest.Containers[0].Build.ExtraHosts[0] = "x"
	s.Manifest.Volumes = append(s.Manifest.Volumes[:1], manifest.Volume{Name: "x"})
	s.Manifest.Containers = append(s.Manifest.Containers, manifest.Container{Name: "x"})
	second, err2 := kept.result()
	if err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("second result's errors %v, want %v", err2, err)
	}
	a := second[0]
	if a.Keys["containers[0].image"] != "services.web.image" || a.Hidden[0] != "secret-ish" || a.HiddenParts[0] != "part" ||
		a.Manifest.Containers[0].Build.ExtraHosts[0] != "h:1.2.3.4" || len(a.Manifest.Containers) != 1 ||
		len(a.Manifest.Volumes) != 2 || a.Manifest.Volumes[1].Name != "data" {
		t.Errorf("a change to a result reached the next: %+v", a)
	}
	if a.Manifest.Volumes[0].Files == nil || a.Manifest.Containers[0].Build.Files == nil {
		t.Error("files out of place after a change to an earlier result")
	}
}
