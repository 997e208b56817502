package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      RESTART
      containers: [{name: c, image: busybox}]
`

// An object that cannot say which pods it makes fails its source (which
// keeps its last good set, its pods running): no pod carries the error
// under an id that would remove the replicas running. Other errors are
// the pod's, or the source's where there is no pod.
func TestTranslationErrorsLandWhereNothingRunningIsLost(t *testing.T) {
	tests := []struct {
		name, text, want string
		pods             []string
	}{
		{"replicas over the bound", strings.NewReplacer("REPLICAS", "101", "RESTART", "").Replace(deployment),
			`s:f.yaml: pod "web": spec.replicas: 101 is not in 0..100`, nil},
		{"a Deployment that does not restart Always", strings.NewReplacer("REPLICAS", "2", "RESTART", "restartPolicy: Never").Replace(deployment),
			`spec.template.spec.restartPolicy: "Never": a Deployment's pods restart Always`, nil},
		{"no replicas, a refused field", strings.NewReplacer("REPLICAS", "0", "RESTART", "nodeName: n1").Replace(deployment),
			`pod "web-1": spec.template.spec.nodeName: not supported on a single host`, nil},
		{"a pod's own error", strings.NewReplacer("REPLICAS", "2", "RESTART", "nodeName: n1").Replace(deployment),
			`pod "web-2": spec.template.spec.nodeName: not supported on a single host`, []string{"web-1", "web-2"}},
		{"two volumes of one name", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: v, emptyDir: {medium: Memory}}, {name: v, emptyDir: {}}]
  containers: [{name: c, image: busybox}]
`, `spec.volumes[1].name: a second volume "v"`, []string{"p"}},
		{"two claims of one Docker volume", `apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: b-c, namespace: a}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: a-b-c}
`, `PersistentVolumeClaim a-b-c: metadata.name: its Docker volume a-b-c is also the one of PersistentVolumeClaim a/b-c`, nil},
		{"a SOPS-encrypted value", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox, env: [{name: PW, value: "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"}]}]
`, `holds SOPS-encrypted values (ENC[...]): only a Secret's data and stringData values may be encrypted`, nil},
		{"an encrypted Secret in a plain file", `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {k: "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"}
`, `Secret s: holds SOPS-encrypted values (ENC[...]) outside a SOPS file of a file or git source`, nil},
		{"a SOPS-encrypted value copied into a ConfigMap", `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {k: "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
binaryData: {k: "RU5DW0FFUzI1Nl9HQ00sZGF0YTphYmM9LGl2OmFiYz0sdGFnOmFiYz0sdHlwZTpzdHJd"}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox, env: [{name: K, valueFrom: {configMapKeyRef: {name: c, key: k}}}]}]
`, `spec.containers[0].env[0].valueFrom.configMapKeyRef.name: ConfigMap "c": key "k" holds an encrypted value (SOPS) or text hostlet keeps for its own secrets`, []string{"p"}},
		{"a SOPS file's Pod writing hostlet's own text", `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox, env: [{name: K, value: "{{hostlet-base64:czNjcmV0}}"}]}]
`, `spec.containers[0].env[0].value: holds an encrypted value (SOPS) that is no value of an encrypted Secret of the source, or text hostlet keeps for its own secrets`, []string{"p"}},
		{"a SOPS-encrypted Secret with a key given twice", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
 "data": {"k": "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]", "k": "ENC[AES256_GCM,data:def=,iv:abc=,tag:abc=,type:str]"}}
`, `Secret s: data.k: duplicate field`, nil},
		{"a SOPS-encrypted value in a Secret's metadata", `apiVersion: v1
kind: Secret
metadata: {name: s, annotations: {a: "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"}}
stringData: {k: v}
`, `Secret s: metadata: holds a SOPS-encrypted value: only a Secret's data and stringData values may be encrypted`, nil},
		{"a SOPS-encrypted value beside other text", `apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {k: "x ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"}
`, `Secret s: stringData.k: holds a SOPS-encrypted value beside other text: encrypt whole values`, nil},
		{"a SOPS-encrypted value copied into a ConfigMap mounted as files", `apiVersion: v1
kind: Secret
metadata: {name: s}
data: {k: "ENC[AES256_GCM,data:abc=,iv:abc=,tag:abc=,type:str]"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
binaryData: {k: "e3tob3N0bGV0LWJhc2U2NDpFTkNbQUVTMjU2X0dDTSxkYXRhOmFiYz0saXY6YWJjPSx0YWc6YWJjPSx0eXBlOnN0cl19fQ=="}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /s}]}]
  volumes: [{name: v, projected: {sources: [{secret: {name: s}}, {configMap: {name: c, items: [{key: k, path: copy}]}}]}}]
`, `spec.volumes[0].projected.sources[1].configMap.name: ConfigMap "c": key "k" holds an encrypted value (SOPS) or text hostlet keeps for its own secrets`, []string{"p"}},
		{"a control character in an item path", `apiVersion: v1
kind: ConfigMap
metadata: {name: conf}
data: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  volumes: [{name: v, configMap: {name: conf, items: [{key: k, path: "a\u0000b"}]}}]
  containers: [{name: c, image: busybox, volumeMounts: [{name: v, mountPath: /v}]}]
`, `holds a control character`, []string{"p"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(tt.text), manifest.Origin{Source: "s", File: "f.yaml"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(tt.name, "SOPS") {
				// Read from a SOPS file, as a file or git source marks it.
				for i := range ms {
					if ms[i].Kube != nil {
						ms[i].Kube.Sealed = true
					}
				}
			}
			pods, errs := Translate(ms)
			var ids, texts []string
			for _, p := range pods {
				ids = append(ids, p.Manifest.ID)
				for _, e := range p.Errors {
					texts = append(texts, e.Error())
				}
			}
			for _, e := range errs {
				texts = append(texts, e.Error())
			}
			if !slices.Equal(ids, tt.pods) {
				t.Errorf("pods %q, want %q", ids, tt.pods)
			}
			if !slices.ContainsFunc(texts, func(e string) bool { return strings.Contains(e, tt.want) }) {
				t.Errorf("errors %q, want one holding %q", texts, tt.want)
			}
		})
	}
}
