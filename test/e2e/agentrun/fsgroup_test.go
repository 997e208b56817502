package agentrun_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/hostlet/hostlet/internal/imagetar"
	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/composetest"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// fsGroupObjects is a pod running as user 1000 with fsGroup 2000: an init
// container writes into an emptyDir, the app container (of image, which
// has a folder /seed holding a file) serves it, a PersistentVolumeClaim
// (named claim) mounted at /seed and a 0440 Secret file.
func (e *env) fsGroupObjects(port int, claim, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: token}
data: {token: czNjcmV0}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: %[3]s}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: grouped}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 1000, fsGroup: 2000}
  initContainers:
  - name: prep
    image: %[1]s
    imagePullPolicy: Never
    command: [/demo, write, /scratch/init.txt, "from init"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  containers:
  - name: app
    image: %[4]s
    imagePullPolicy: Never
    ports: [{containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: data, mountPath: /seed}
    - {name: token, mountPath: /run/token, readOnly: true}
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: data, persistentVolumeClaim: {claimName: %[3]s}}
  - {name: token, secret: {secretName: token, defaultMode: 0440}}
`, e.image, port, claim, image)
}

// seededImage is an image of the demo server with a folder /seed (root's,
// 0755) holding a file keep: a volume mounted there would be filled from
// it, and given its owner and mode, if it were copied up.
func (e *env) seededImage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(dockertest.DemoBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	ref := "hostlet-test-seeded:" + e.instance
	var archive bytes.Buffer
	files := []imagetar.File{{Path: "/demo", Mode: 0o755, Data: data}, {Path: "/seed/keep", Data: []byte("from the image")}}
	if err := imagetar.Write(&archive, ref, files, []string{"/demo"}, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := hruntime.LoadArchive(ctx, e.docker, &archive); err != nil {
		t.Fatalf("load %s: %v", ref, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		e.docker.ImageRemove(ctx, ref, image.RemoveOptions{Force: true})
	})
	return ref
}

// TestKubernetesFSGroup: a pod running as user 1000 with fsGroup 2000
// writes into its emptyDir (its init container too) and its claim, and
// reads its 0440 Secret file, which only the group lets it; what it
// makes belongs to group 2000 on the host. The claim is mounted where the
// image has a folder of root's: it starts empty and stays the group's
// (not copied up from the image).
func TestKubernetesFSGroup(t *testing.T) {
	e := newEnv(t)
	tree := filepath.Join(e.dir, "tree")
	port := testkit.FreePort(t)
	claim := e.instance // a Docker volume of the engine: unique per run
	testkit.WriteFile(t, filepath.Join(tree, "objects.yaml"), e.fsGroupObjects(port, claim, e.seededImage(t)))
	cfg := e.config(t, fmt.Sprintf("compose:\n  helper: %s\nsources:\n  - {name: local, type: file, path: %s, interval: 1s}\n", composetest.Helper(t), tree))
	e.start(t, cfg)

	e.waitPods(t, 90*time.Second, "grouped")
	url := fmt.Sprintf("http://127.0.0.1:%d/", port)
	testkit.WaitHTTP(t, 30*time.Second, http.MethodGet, url+"read?path=/run/token/token", "", "s3cret")
	testkit.WaitHTTP(t, 10*time.Second, http.MethodGet, url+"read?path=/scratch/init.txt", "", "from init")
	testkit.WaitHTTP(t, 10*time.Second, http.MethodPost, url+"write?path=/scratch/app.txt", "scratch", "wrote")
	testkit.WaitHTTP(t, 10*time.Second, http.MethodPost, url+"write?path=/seed/app.txt", "data", "wrote")
	// Podman's Docker-compatible API does not take nocopy: there the
	// claim is filled from the image (its root stays the group's, written
	// above); on Docker it starts empty.
	if _, err := os.Stat(filepath.Join(e.mountpoint(t, claim), "keep")); !dockertest.Engine(t).Podman() && !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the claim was filled from the image's /seed (stat keep: %v)", err)
	}

	files := map[string]string{
		"emptyDir, by the init container": filepath.Join(e.mountpoint(t, podspec.VolumeName(e.instance, "grouped", "scratch")), "init.txt"),
		"emptyDir, by the app container":  filepath.Join(e.mountpoint(t, podspec.VolumeName(e.instance, "grouped", "scratch")), "app.txt"),
		"claim, by the app container":     filepath.Join(e.mountpoint(t, claim), "app.txt"),
	}
	for what, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 || st.Gid != 2000 {
			t.Errorf("%s: %s is owned by %d:%d, want 1000:2000", what, p, st.Uid, st.Gid)
		}
	}
}

// mountpoint is the folder on the host of the engine's volume name.
func (e *env) mountpoint(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := e.docker.VolumeInspect(ctx, name)
	if err != nil {
		t.Fatalf("inspect volume %s: %v", name, err)
	}
	return v.Mountpoint
}
