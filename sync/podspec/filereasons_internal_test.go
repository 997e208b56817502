package podspec

import (
	"slices"
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
