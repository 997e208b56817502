package podspec

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// A changed file says which: by its path in the source, or, for a
// Kubernetes ConfigMap's or Secret's key, in Kubernetes' words.
func TestFileChangeReasonsNameTheFile(t *testing.T) {
	env := RandomEnvHasher()
	tests := []struct {
		source, path string
		want         string
	}{
		{"configmap web-conf", "nginx.conf", "configmap web-conf key nginx.conf changed"},
		{"secret web-tls", "tls.key", "secret web-tls key tls.key changed"},
		{"conf", "app.conf", "file conf/app.conf changed"},
		{"projected", "app.conf", "file projected/app.conf changed"},
		{"configmap web/conf", "x", "file configmap web/conf/x changed"},
	}
	for _, tt := range tests {
		withData := func(data string) manifest.Manifest {
			return manifest.Manifest{Version: manifest.Version, ID: "web",
				Volumes: []manifest.Volume{{Name: "conf", Files: manifest.NewFiles(tt.source, false, []manifest.FileItem{{Path: tt.path, Data: []byte(data)}})}},
				Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1",
					VolumeMounts: []manifest.VolumeMount{{Name: "conf", MountPath: "/etc/conf"}}}}}
		}
		got := changeReasons(Summarize(withData("a"), 0, env), Summarize(withData("b"), 0, env))
		if !slices.Contains(got, tt.want) {
			t.Errorf("%s %s: reasons %q, want %q", tt.source, tt.path, got, tt.want)
		}
	}
}

// A key of a Kubernetes Secret encrypted in place, mounted as a file, is
// a token of its plaintext: a changed plaintext says which key changed,
// in Kubernetes' words, and which file; the same plaintext encrypted
// again (the same token) changes nothing; a Compose secret file's change
// stays its file's alone.
func TestSealedKeyChangeReasonsNameTheKey(t *testing.T) {
	env := RandomEnvHasher()
	tokA, tokB := tokenOf("secret.yaml", "a"), tokenOf("secret.yaml", "b")
	pod := func(source, tok string, kube bool) manifest.Manifest {
		m := manifest.Manifest{Version: manifest.Version, ID: "web",
			Volumes: []manifest.Volume{{Name: "db", Files: manifest.NewFiles(source, true, []manifest.FileItem{{Path: "password", Data: []byte(manifest.Base64Part(tok)), Sealed: "secret.yaml"}})}},
			Containers: []manifest.Container{{Name: "app", Image: "example.org/app:1",
				VolumeMounts: []manifest.VolumeMount{{Name: "db", MountPath: "/etc/db"}}}}}
		if kube {
			m.Object = &manifest.ObjectRef{Kind: "Pod", Name: "web"}
		}
		return m
	}
	tests := []struct {
		name, source string
		kube         bool
		old, new     string
		want         []string
	}{
		{"a changed key", "secret db", true, tokA, tokB, []string{"secret db key password changed", "secret secret.yaml changed"}},
		{"encrypted again", "secret db", true, tokA, tokA, nil},
		{"a Compose secret file", "dbpass.txt", false, tokA, tokB, []string{"secret secret.yaml changed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := changeReasons(Summarize(pod(tt.source, tt.old, tt.kube), 0, env), Summarize(pod(tt.source, tt.new, tt.kube), 0, env))
			if !slices.Equal(got, tt.want) {
				t.Errorf("reasons %q, want %q", got, tt.want)
			}
		})
	}
}

// tokenOf is a token of file standing for a plaintext named
// by seed.
func tokenOf(file, seed string) string {
	return manifest.SecretToken(file, strings.Repeat(seed, 32))
}
