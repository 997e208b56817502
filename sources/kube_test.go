package sources_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
)

// writeKubeTree writes files (path: content) under a new folder.
func writeKubeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		testkit.WriteFile(t, filepath.Join(dir, name), content)
	}
	return dir
}

const kubeDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env:
        - name: LEVEL
          valueFrom: {configMapKeyRef: {name: conf, key: level}}
`

// A source's Kubernetes objects are translated together, through the
// helper: a Deployment finds the ConfigMap of another file, its pods take
// its place among the source's manifests, and the ConfigMap leaves.
func TestTreeTranslatesKubernetesObjectsAcrossFiles(t *testing.T) {
	dir := writeKubeTree(t, map[string]string{
		"a-native.yaml": "version: v1beta1\nid: native\ncontainers: [{name: a, image: busybox}]\n",
		"b-web.yaml":    kubeDeployment,
		"c-conf.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {level: debug}\n",
	})
	r := composetest.Renderer(t, project.Host{})
	snap, err := sources.ReadTree(context.Background(), dir, []string{"."}, "repo", r)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range snap.Manifests {
		ids = append(ids, m.Manifest.ID)
		if m.Kube != nil {
			t.Errorf("an untranslated object in the snapshot: %v", m.Kube)
		}
	}
	if want := []string{"native", "web-1", "web-2"}; !slices.Equal(ids, want) {
		t.Fatalf("pods %q, want %q", ids, want)
	}
	web := snap.Manifests[1]
	if web.Origin.File != "b-web.yaml" || web.Manifest.Containers[0].Env[0] != (manifest.EnvVar{Name: "LEVEL", Value: "debug"}) {
		t.Errorf("web-1 from %s with env %v, want b-web.yaml and LEVEL=debug", web.Origin, web.Manifest.Containers[0].Env)
	}
}

// Without a renderer (a reader that runs no helper), Kubernetes objects
// are the source's error, never pods without their translation.
func TestTreeWithoutRendererRefusesKubernetesObjects(t *testing.T) {
	dir := writeKubeTree(t, map[string]string{"web.yaml": kubeDeployment})
	snap, err := sources.ReadTree(context.Background(), dir, []string{"."}, "repo", nil)
	if err == nil || !strings.Contains(err.Error(), "repo:web.yaml: Kubernetes objects are not read here (no renderer)") {
		t.Errorf("err = %v, want the no-renderer error naming the file", err)
	}
	if len(snap.Manifests) != 0 {
		t.Errorf("manifests %v, want none", snap.Manifests)
	}
}

// A Deployment whose ConfigMap is missing gives pods carrying the error
// (validation rejects them alone); the source itself reads.
func TestTreeKeepsAPodsTranslationErrorsWithThePod(t *testing.T) {
	dir := writeKubeTree(t, map[string]string{"web.yaml": kubeDeployment})
	snap, err := sources.ReadTree(context.Background(), dir, []string{"."}, "repo", composetest.Renderer(t, project.Host{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Manifests) != 2 {
		t.Fatalf("%d pods, want 2", len(snap.Manifests))
	}
	for _, m := range snap.Manifests {
		if len(m.Errors) != 1 || !strings.Contains(m.Errors[0].Error(), `repo:web.yaml: pod "`+m.Manifest.ID+`": spec.template.spec.containers[0].env[0].valueFrom.configMapKeyRef.name: ConfigMap "conf" is not in namespace default of this source`) {
			t.Errorf("pod %s errors %v", m.Manifest.ID, m.Errors)
		}
	}
}
