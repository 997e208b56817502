package kube_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/kube"
)

// benchSource is a source of n Deployments of 3 replicas, each with a
// ConfigMap of 10 keys mounted as files and read as env.
func benchSource(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf-%d}\ndata:\n", i)
		for k := range 10 {
			fmt.Fprintf(&b, "  key%d: %q\n", k, strings.Repeat("v", 100))
		}
		fmt.Fprintf(&b, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-%[1]d, labels: {app: app-%[1]d}}
spec:
  replicas: 3
  selector: {matchLabels: {app: app-%[1]d}}
  template:
    metadata: {labels: {app: app-%[1]d}}
    spec:
      containers:
      - name: app
        image: registry.example/app:1.%[1]d
        ports: [{containerPort: 8080}]
        envFrom: [{configMapRef: {name: conf-%[1]d}}]
        readinessProbe: {httpGet: {path: /ready, port: 8080}}
        resources: {limits: {cpu: 500m, memory: 256Mi}}
        volumeMounts: [{name: conf, mountPath: /etc/app}]
      volumes: [{name: conf, configMap: {name: conf-%[1]d}}]
`, i)
	}
	return []byte(b.String())
}

// BenchmarkTranslate decodes and translates a source of 50 Deployments
// (150 pods) with their ConfigMaps, as the helper does at each change of
// the source.
func BenchmarkTranslate(b *testing.B) {
	data := benchSource(50)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		ms, err := manifest.Decode(data, manifest.Origin{Source: "s", File: "apps.yaml"})
		if err != nil {
			b.Fatal(err)
		}
		pods, errs := kube.Translate(ms)
		if len(pods) != 150 || len(errs) > 0 {
			b.Fatalf("%d pods, errors %v", len(pods), errs)
		}
	}
}
