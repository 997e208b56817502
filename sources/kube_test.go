package sources_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/sopstest"
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

// encryptedSecret is Secret db holding value under key password and blob
// under key blob (stringData), encrypted in place as Flux encrypts one.
func encryptedSecret(t *testing.T, value, blob string) string {
	t.Helper()
	plain := "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: " + value + "\n  blob: " + blob + "\n"
	key := sopstest.NewKey(t)
	return string(sopstest.Encrypt(t, "secret.yaml", []byte(plain), []string{key.Recipient}, "--encrypted-regex", "^(data|stringData)$"))
}

// readerDeployment is Deployment reader of replicas pods reading db's
// password.
func readerDeployment(replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: reader}
spec:
  replicas: %d
  selector: {matchLabels: {app: reader}}
  template:
    metadata: {labels: {app: reader}}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env:
        - name: PASSWORD
          valueFrom: {secretKeyRef: {name: db, key: password}}
`, replicas)
}

// A Secret encrypted in place reaches, as its ciphertext with its SOPS
// file attached, exactly the pods reading it; the same Secret in a plain
// file, or a copy of its ciphertext in a ConfigMap, is refused.
func TestTreeAttachesAnEncryptedSecretsFileToThePodsReadingIt(t *testing.T) {
	secret := encryptedSecret(t, "s3cret", "b")
	dir := writeKubeTree(t, map[string]string{
		"secret.yaml": secret,
		"reader.yaml": readerDeployment(2),
		"other.yaml":  "version: v1beta1\nid: other\ncontainers: [{name: a, image: busybox}]\n",
	})
	snap, err := sources.ReadTree(context.Background(), dir, []string{"."}, "repo", composetest.Renderer(t, project.Host{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap.Manifests {
		sealed := len(m.Manifest.Sealed) == 1 && m.Manifest.Sealed[0].File == "secret.yaml"
		switch {
		case len(m.Errors) > 0:
			t.Errorf("pod %s: %v", m.Manifest.ID, m.Errors)
		case strings.HasPrefix(m.Manifest.ID, "reader-") && (!sealed || len(manifest.EncryptedValues(m.Manifest.Containers[0].Env[0].Value)) != 1):
			t.Errorf("pod %s: sealed %v, env %q; want secret.yaml attached and the ciphertext", m.Manifest.ID, m.Manifest.Sealed, m.Manifest.Containers[0].Env[0].Value)
		case m.Manifest.ID == "other" && len(m.Manifest.Sealed) > 0:
			t.Errorf("pod other, reading no secret, carries %v", m.Manifest.Sealed)
		}
	}

	// The encrypted Secret's text in a plain file: refused.
	plainCopy := strings.Split(secret, "sops:")[0]
	dir = writeKubeTree(t, map[string]string{"secret.yaml": plainCopy, "reader.yaml": readerDeployment(1)})
	_, err = sources.ReadTree(context.Background(), dir, []string{"."}, "repo", composetest.Renderer(t, project.Host{}))
	if err == nil || !strings.Contains(err.Error(), "outside a SOPS file") {
		t.Errorf("an encrypted Secret in a plain file: %v, want it refused", err)
	}
}

// The encrypted files a source's pods carry, one copy per pod, are
// bounded: a big Secret one small key of which many replicas read fails
// the source.
func TestTreeBoundsTheEncryptedFilesItsPodsCarry(t *testing.T) {
	big := strings.Repeat("x", project.MaxSealedBytes/80)
	dir := writeKubeTree(t, map[string]string{"secret.yaml": encryptedSecret(t, "s3cret", big), "reader.yaml": readerDeployment(100)})
	_, err := sources.ReadTree(context.Background(), dir, []string{"."}, "repo", composetest.Renderer(t, project.Host{}))
	if !errors.Is(err, manifest.ErrTooLarge) || !strings.Contains(err.Error(), "the encrypted files the source's pods carry") {
		t.Errorf("err = %v, want the bound on encrypted files", err)
	}
}

// readerOfFiles is Pod files mounting Secret db as files: whole, one key
// at a path, one key by subPath, and in a projected volume beside a plain
// ConfigMap.
const readerOfFiles = `apiVersion: v1
kind: Pod
metadata: {name: files}
spec:
  containers:
  - name: app
    image: nginx:1.27
    volumeMounts:
    - {name: whole, mountPath: /etc/db}
    - {name: picked, mountPath: /etc/picked}
    - {name: whole, mountPath: /etc/pw, subPath: password}
    - {name: mixed, mountPath: /etc/mixed}
  volumes:
  - {name: whole, secret: {secretName: db, defaultMode: 0440}}
  - {name: picked, secret: {secretName: db, items: [{key: blob, path: a/blob, mode: 0400}]}}
  - {name: mixed, projected: {sources: [{secret: {name: db, items: [{key: password, path: pw}]}}, {configMap: {name: plain}}]}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: plain}
data: {level: info}
`

// The keys of a Secret encrypted in place, mounted as files in any way a
// pod can, reach the pod as their ciphertext, each file marked with the
// Secret's SOPS file, which is attached to the pod; a plain ConfigMap's
// file beside them stays as it is.
func TestTreeMarksTheKeysOfAnEncryptedSecretMountedAsFiles(t *testing.T) {
	dir := writeKubeTree(t, map[string]string{"secret.yaml": encryptedSecret(t, "s3cret", "b"), "files.yaml": readerOfFiles})
	snap, err := sources.ReadTree(context.Background(), dir, []string{"."}, "repo", composetest.Renderer(t, project.Host{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Manifests) != 1 || len(snap.Manifests[0].Errors) > 0 {
		t.Fatalf("manifests %v", snap.Manifests)
	}
	m := snap.Manifests[0].Manifest
	if len(m.Sealed) != 1 || m.Sealed[0].File != "secret.yaml" {
		t.Errorf("sealed %v, want secret.yaml attached", m.Sealed)
	}
	var marked []string
	for _, v := range m.Volumes {
		for _, it := range v.Files.Items {
			_, _, isValue := manifest.SealedItemValue(it.Data)
			switch {
			case it.Path == "level" && (it.Sealed != "" || string(it.Data) != "info"):
				t.Errorf("volume %s: the ConfigMap's file is %q marked %q", v.Name, it.Data, it.Sealed)
			case it.Path != "level" && (it.Sealed != "secret.yaml" || !isValue):
				t.Errorf("volume %s file %q: marked %q, data %q; want an encrypted value of secret.yaml", v.Name, it.Path, it.Sealed, it.Data)
			case it.Sealed != "":
				marked = append(marked, v.Name+":"+it.Path)
			}
		}
	}
	want := []string{"whole:blob", "whole:password", "picked:a/blob", "mixed:pw", "whole-sub1:"}
	slices.Sort(marked)
	slices.Sort(want)
	if !slices.Equal(marked, want) {
		t.Errorf("marked %q, want %q", marked, want)
	}
}
