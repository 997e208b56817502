package manifest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-multierror"

	"github.com/hostlet/hostlet/manifest"
)

// errorLines returns the strings of every *manifest.Error in err, in order.
func errorLines(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var merr *multierror.Error
	if errors.As(err, &merr) {
		var out []string
		for _, e := range merr.Errors {
			out = append(out, errorLines(t, e)...)
		}
		return out
	}
	var me *manifest.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *manifest.Error", err, err)
	}
	return []string{me.Error()}
}

// strictLines returns the errors kept in the decoded manifests.
func strictLines(ms []manifest.Sourced) []string {
	var out []string
	for _, m := range ms {
		for _, e := range m.Errors {
			out = append(out, e.Error())
		}
	}
	return out
}

var origin = manifest.Origin{Source: "fleet", File: "hosts/web-1/web.yaml"}

func TestDecodeUnknownFields(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{
			name: "field names are case-sensitive",
			in: `
version: v1beta1
id: web
containers:
  - name: app
    image: nginx
    ports:
      - containerPort: 80
        hostport: 8080
`,
			want: []string{`fleet:hosts/web-1/web.yaml: pod "web": containers[0].ports[0].hostport: unknown field (did you mean "hostPort"? field names are case-sensitive)`},
		},
		{
			name: "top level and deep",
			in: `
Version: v1beta1
id: web
volumes: [{name: data, hostpath: /srv}]
containers:
  - {name: a, image: nginx}
  - name: b
    image: nginx
    livenessProbe: {type: http, httpGet: {port: "80", scheme: HTTPS}}
    resources: {memory: 1}
`,
			want: []string{
				`fleet:hosts/web-1/web.yaml: pod "web": Version: unknown field (did you mean "version"? field names are case-sensitive)`,
				`fleet:hosts/web-1/web.yaml: pod "web": containers[1].livenessProbe.httpGet.scheme: unknown field`,
				`fleet:hosts/web-1/web.yaml: pod "web": containers[1].resources: unknown field`,
				`fleet:hosts/web-1/web.yaml: pod "web": volumes[0].hostpath: unknown field (did you mean "hostPath"? field names are case-sensitive)`,
			},
		},
		{
			name: "JSON keeps the input's order and finds duplicates",
			in:   `{"version": "v1beta1", "id": "web", "zz": 1, "containers": [{"name": "a", "name": "b", "image": "nginx"}], "aa": {"x": [1]}}`,
			want: []string{
				`fleet:hosts/web-1/web.yaml: pod "web": zz: unknown field`,
				`fleet:hosts/web-1/web.yaml: pod "web": containers[0].name: duplicate field`,
				`fleet:hosts/web-1/web.yaml: pod "web": aa: unknown field`,
			},
		},
		{
			name: "odd keys are quoted",
			in:   `{"version": "v1beta1", "id": "web", "containers": [{"name": "a", "image": "nginx", "bad key\n": 1}]}`,
			want: []string{`fleet:hosts/web-1/web.yaml: pod "web": containers[0]["bad key\n"]: unknown field`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.in), origin)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(ms) != 1 {
				t.Fatalf("got %d manifests, want 1 (with its unknown fields in Errors)", len(ms))
			}
			if got := strictLines(ms); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
			}
		})
	}
}

func TestDecodeWrongTypes(t *testing.T) {
	in := `
version: v1beta1
id: web
labels: {on: yes, num: 1}
containers:
  - name: app
    image: nginx
    ports:
      - containerPort: "abc"
      - containerPort: 1.5
        hostport: 1
    env: [{name: A, value: {x: 1}}]
    livenessProbe: {type: http, httpGet: {port: 8080}}
    memory: 99999999999999999999
`
	want := []string{
		`a:f.yaml: pod "web": containers[0].env[0].value: wrong type: got mapping, want string`,
		`a:f.yaml: pod "web": containers[0].livenessProbe.httpGet.port: wrong type: got number, want string`,
		`a:f.yaml: pod "web": containers[0].memory: wrong type: got number 100000000000000000000, want integer`,
		`a:f.yaml: pod "web": containers[0].ports[0].containerPort: wrong type: got string, want integer`,
		`a:f.yaml: pod "web": containers[0].ports[1].containerPort: wrong type: got number 1.5, want integer`,
		`a:f.yaml: pod "web": containers[0].ports[1].hostport: unknown field (did you mean "hostPort"? field names are case-sensitive)`,
		`a:f.yaml: pod "web": labels["num"]: wrong type: got number, want string`,
		`a:f.yaml: pod "web": labels["true"]: wrong type: got boolean, want string`,
	}
	ms, err := manifest.Decode([]byte(in), manifest.Origin{Source: "a", File: "f.yaml"})
	if len(ms) != 0 {
		t.Errorf("got %d manifests, want none: a value of the wrong type stops the manifest", len(ms))
	}
	if got := errorLines(t, err); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

func TestDecodeIndexes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		// want lists "id index" of the decoded manifests.
		want []string
		errs []string
	}{
		{
			name: "one manifest",
			in:   "version: v1beta1\nid: a\ncontainers: []\n",
			want: []string{"a 0"},
		},
		{
			name: "documents",
			in:   "# header\n---\nid: a\n---\nid: b\n--- # third\nid: c\n",
			want: []string{"a 0", "b 1", "c 2"},
		},
		{
			name: "empty documents are skipped",
			in:   "id: a\n---\n---\n# only a comment\n---\nid: b\n---\n",
			want: []string{"a 0", "b 1"},
		},
		{
			name: "list",
			in:   "- id: a\n- id: b\n- id: c\n",
			want: []string{"a 0", "b 1", "c 2"},
		},
		{
			name: "lists in documents",
			in:   "- id: a\n- id: b\n---\nid: c\n---\n[{id: d}, {id: e}]\n",
			want: []string{"a 0", "b 1", "c 2", "d 3", "e 4"},
		},
		{
			name: "JSON list",
			in:   `[{"id": "a"}, {"id": "b"}]`,
			want: []string{"a 0", "b 1"},
		},
		{
			name: "bad items keep their index",
			in:   "- id: a\n- oops\n- id: c\n",
			want: []string{"a 0", "c 2"},
			errs: []string{"a:f.yaml: manifest 2: expected a mapping, found a string"},
		},
		{
			name: "a bad document",
			in:   "id: a\n---\nid: [b\n---\nid: c\n",
			want: []string{"a 0", "c 1"},
			errs: []string{"a:f.yaml: document 2: not valid YAML or JSON: line 3: did not find expected ',' or ']'"},
		},
		{
			name: "content after the marker",
			in:   "id: a\n--- {id: b}\n--- [{id: c}]\n",
			want: []string{"a 0", "b 1", "c 2"},
		},
		{
			name: "end marker",
			in:   "id: a\n...\nid: b\n... # end\n",
			want: []string{"a 0", "b 1"},
		},
		{
			name: "not a marker",
			in:   "id: a\nlabels:\n  x: |\n    ---\n    ...\n  y: \"---\"\n",
			want: []string{"a 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.in), manifest.Origin{Source: "a", File: "f.yaml", Index: 99})
			var got []string
			for _, m := range ms {
				if m.Origin.Source != "a" || m.Origin.File != "f.yaml" {
					t.Errorf("origin %+v lost its source or file", m.Origin)
				}
				got = append(got, fmt.Sprintf("%s %d", m.Manifest.ID, m.Origin.Index))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("manifests %q, want %q", got, tt.want)
			}
			if gotErrs := errorLines(t, err); !slices.Equal(gotErrs, tt.errs) {
				t.Errorf("errors %q, want %q", gotErrs, tt.errs)
			}
		})
	}
}

func TestDecodeFileErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
		// manifests is the number of manifests decoded despite the errors.
		manifests int
	}{
		{name: "empty", in: "", want: []string{"a:f.yaml: no manifest found (the file is empty, or holds only comments or an empty list)"}},
		{name: "blank", in: "\n\n  \n", want: []string{"a:f.yaml: no manifest found (the file is empty, or holds only comments or an empty list)"}},
		{name: "comments", in: "# a\n---\n# b\n", want: []string{"a:f.yaml: no manifest found (the file is empty, or holds only comments or an empty list)"}},
		{name: "null", in: "~\n", want: []string{"a:f.yaml: no manifest found (the file is empty, or holds only comments or an empty list)"}},
		{name: "empty list", in: "[]", want: []string{"a:f.yaml: no manifest found (the file is empty, or holds only comments or an empty list)"}},
		{name: "scalar", in: "42\n", want: []string{"a:f.yaml: document 1: expected a manifest (a mapping) or a list of manifests, found a number"}},
		{name: "string", in: "hello\n", want: []string{"a:f.yaml: document 1: expected a manifest (a mapping) or a list of manifests, found a string"}},
		{name: "boolean", in: "true\n", want: []string{"a:f.yaml: document 1: expected a manifest (a mapping) or a list of manifests, found a boolean"}},
		{name: "a mapping that is no manifest", in: "hello: world\nError: 500\n", want: []string{"a:f.yaml: Error: unknown field", "a:f.yaml: hello: unknown field"}},
		{name: "NUL byte", in: "id: a\x00\n", want: []string{"a:f.yaml: not a text file (binary data or invalid UTF-8)"}},
		{name: "invalid UTF-8", in: "id: \xff\xfe\n", want: []string{"a:f.yaml: not a text file (binary data or invalid UTF-8)"}},
		{
			name: "duplicate keys on one line each",
			in:   "id: a\nid: b\nlabels: {x: 1, x: 2}\n",
			want: []string{`a:f.yaml: document 1: not valid YAML or JSON: line 2: duplicate key "id"; line 3: duplicate key "x"`},
		},
		{
			name:      "line numbers count from the file's start",
			in:        "id: a\n---\nid: b\n---\n\nid: c\n  bad: indent\n",
			want:      []string{"a:f.yaml: document 3: not valid YAML or JSON: line 7: mapping values are not allowed in this context"},
			manifests: 2,
		},
		{
			name: "alias bomb",
			in: `a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
`,
			want: []string{"a:f.yaml: document 1: not valid YAML or JSON: document contains excessive aliasing"},
		},
		{
			name: "too deep",
			in:   "a: " + strings.Repeat("[", 20000) + "\n",
			want: []string{"a:f.yaml: document 1: not valid YAML or JSON: exceeded max depth of 10000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.in), manifest.Origin{Source: "a", File: "f.yaml"})
			if len(ms) != tt.manifests {
				t.Errorf("got %d manifests, want %d", len(ms), tt.manifests)
			}
			if got := errorLines(t, err); !slices.Equal(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestDecodeTooLarge(t *testing.T) {
	data := make([]byte, manifest.MaxSize+1)
	_, err := manifest.Decode(data, manifest.Origin{Source: "a", File: "f.yaml"})
	want := "a:f.yaml: 10485761 bytes: larger than the size limit of 10485760 bytes"
	if err == nil || err.Error() != want {
		t.Errorf("Decode = %v, want %s", err, want)
	}
}

// TestDecodeJSON checks that valid JSON reads as JSON, even where YAML 1.1
// would refuse it, so that a manifest written out with encoding/json reads
// back unchanged.
func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		value string
	}{
		{name: "tabs", in: "{\n\t\"version\": \"v1beta1\",\n\t\"id\": \"web\",\n\t\"containers\": [{\"name\": \"app\", \"image\": \"nginx\", \"env\": [{\"name\": \"A\", \"value\": \"a\\tb\"}]}]\n}\n", value: "a\tb"},
		{name: "C1 control character", in: "{\"id\": \"web\", \"containers\": [{\"env\": [{\"name\": \"A\", \"value\": \"x\u0085y\"}]}]}", value: "x\u0085y"},
		{name: "after a marker", in: "---\n{\"id\": \"web\", \"containers\": [{\"env\": [{\"name\": \"A\", \"value\": \"\u0085\"}]}]}\n", value: "\u0085"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.in), origin)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got := ms[0].Manifest.Containers[0].Env[0].Value; got != tt.value {
				t.Errorf("value %q, want %q", got, tt.value)
			}
		})
	}
}

// TestDecodeRoundTrip decodes YAML, writes it out as JSON and decodes it
// again: the manifests must be equal.
func TestDecodeRoundTrip(t *testing.T) {
	in := `
version: v1beta1
id: web
restartPolicy: OnFailure
terminationGracePeriodSeconds: 30
labels: {team: shop}
volumes: [{name: data}, {name: logs, hostPath: /srv/logs}]
containers:
  - name: app
    image: example.org/shop/web:1.4.2
    imagePullPolicy: Always
    command: [/web, "<&>"]
    workingDir: /app
    env: [{name: A, value: "\x85\N\u2028 \"quoted\""}]
    ports: [{name: http, containerPort: 8080, hostPort: 80, protocol: udp, hostIP: "::1"}]
    volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
    memory: 67108864
    cpu: 512
    livenessProbe:
      type: http
      httpGet: {path: /healthz, port: http, host: localhost}
      initialDelaySeconds: 5
      periodSeconds: 7
      timeoutSeconds: 2
      failureThreshold: 4
`
	ms, err := manifest.Decode([]byte(in), origin)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(ms[0].Manifest)
	if err != nil {
		t.Fatal(err)
	}
	again, err := manifest.Decode(js, origin)
	if err != nil {
		t.Fatalf("decoding %s: %v", js, err)
	}
	a, _ := json.Marshal(ms[0].Manifest)
	b, _ := json.Marshal(again[0].Manifest)
	if string(a) != string(b) {
		t.Errorf("round trip changed the manifest:\n got %s\nwant %s", b, a)
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		name string
		err  manifest.Error
		want string
	}{
		{
			name: "everything",
			err:  manifest.Error{Origin: manifest.Origin{Source: "fleet", File: "hosts/web-1/web.yaml", Index: 3}, Pod: "web", Field: "containers[1].ports[0].hostPort", Detail: "70000 is not in 1..65535"},
			want: `fleet:hosts/web-1/web.yaml: pod "web": containers[1].ports[0].hostPort: 70000 is not in 1..65535`,
		},
		{name: "no file", err: manifest.Error{Origin: manifest.Origin{Source: "push"}, Pod: "web", Detail: "x"}, want: `push: pod "web": x`},
		{name: "no source", err: manifest.Error{Origin: manifest.Origin{File: "web.yaml"}, Detail: "x"}, want: `web.yaml: x`},
		{name: "no pod", err: manifest.Error{Origin: manifest.Origin{Source: "a", File: "b"}, Field: "id", Detail: "required"}, want: `a:b: id: required`},
		{name: "detail only", err: manifest.Error{Detail: "x"}, want: `x`},
		{name: "odd pod id is quoted", err: manifest.Error{Pod: "a\nb", Detail: "x"}, want: `pod "a\nb": x`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	tests := []struct {
		image string
		want  string
	}{
		{image: "nginx", want: manifest.PullAlways},
		{image: "nginx:latest", want: manifest.PullAlways},
		{image: "nginx:1.25", want: manifest.PullIfNotPresent},
		{image: "registry:5000/team/app", want: manifest.PullAlways},
		{image: "registry:5000/team/app:1.2", want: manifest.PullIfNotPresent},
		{image: "example.org/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", want: manifest.PullIfNotPresent},
		{image: "example.org/app:latest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", want: manifest.PullIfNotPresent},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			if got := manifest.DefaultPullPolicy(tt.image); got != tt.want {
				t.Errorf("DefaultPullPolicy(%q) = %q, want %q", tt.image, got, tt.want)
			}
		})
	}
}

// TestDecodeKeepsKubernetesObjectsForTheirTranslation: a document with
// apiVersion and kind is a Kubernetes object, kept whole for the source's
// translation (its List unpacked), beside hostlet manifests of the file.
func TestDecodeKeepsKubernetesObjectsForTheirTranslation(t *testing.T) {
	data := []byte(`version: v1beta1
id: native
containers: [{name: a, image: busybox}]
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: conf, namespace: shop}}
- {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}}
---
apiVersion: v1
kind: Pod
metadata: {name: single}
`)
	ms, err := manifest.Decode(data, manifest.Origin{Source: "s", File: "f.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		if m.Kube == nil {
			got = append(got, fmt.Sprintf("%d manifest %s", m.Origin.Index, m.Manifest.ID))
			continue
		}
		got = append(got, fmt.Sprintf("%d %s", m.Origin.Index, m.Kube))
	}
	want := []string{"0 manifest native", "1 ConfigMap shop/conf", "2 Deployment web", "3 Pod single"}
	if !slices.Equal(got, want) {
		t.Errorf("decoded %q, want %q", got, want)
	}
}

// TestDecodeRefusesAListWhoseItemsAreNotAList: the error names the
// document; nothing of it is kept.
func TestDecodeRefusesAListWhoseItemsAreNotAList(t *testing.T) {
	_, err := manifest.Decode([]byte("apiVersion: v1\nkind: List\nitems: {a: 1}\n"), manifest.Origin{Source: "s", File: "f.yaml"})
	if err == nil || !strings.Contains(err.Error(), "s:f.yaml: document 1: a List's items") {
		t.Errorf("err = %v, want one naming document 1 and the List's items", err)
	}
}
