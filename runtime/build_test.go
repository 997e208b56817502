package runtime_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// contextTar writes a build context of files (name: content).
func contextTar(files map[string]string) func(io.Writer) error {
	return func(w io.Writer) error {
		tw := tar.NewWriter(w)
		for name, data := range files {
			if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			if _, err := io.WriteString(tw, data); err != nil {
				return err
			}
		}
		return tw.Close()
	}
}

// TestBuildBothBuilders builds on the real engine with the classic builder
// and with BuildKit (which Debian's 20.10 engine runs in-process through
// the API, though its default is the classic one): the image gets every
// tag, the instance's and pod's build labels, the build arg and the target; a
// build that fails matches ErrBuild, names the failing step and ends with
// the log's last lines; ListBuilt finds the pod's images.
func TestBuildBothBuilders(t *testing.T) {
	for _, builder := range []string{"1", "2"} {
		t.Run("builder-"+builder, func(t *testing.T) {
			instance := dockertest.Instance(t)
			d, err := hruntime.New(testCtx(t), "", instance, dockertest.Logger(t), hruntime.WithBuilder(builder))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			base := dockertest.TestImage(t)
			tag := "hostlet-build/" + instance + "-app:" + builder
			other := "hostlet-test-named-" + instance + ":latest"
			ctx, cancel := context.WithTimeout(testCtx(t), 3*time.Minute)
			defer cancel()
			recipe := "FROM " + base + " AS base\nFROM base AS final\nARG GREETING\nENV MESSAGE=$GREETING\nCOPY msg.txt /msg.txt\nFROM base AS never\nCOPY nope /nope\n"
			res, err := d.Build(ctx, hruntime.BuildSpec{
				Tags: []string{tag}, Names: []string{other, base}, Pod: "p1", Dockerfile: "Dockerfile", Recipe: recipe, Target: "final",
				Args:    map[string]string{"GREETING": "hello-arg"},
				Labels:  map[string]string{"org.example.team": "shop"},
				Context: contextTar(map[string]string{"Dockerfile": recipe, "msg.txt": "one"}),
			})
			if err != nil {
				t.Fatalf("build: %v (log %q)", err, res.Log)
			}
			t.Logf("log: %q", res.Log)
			if len(res.Skipped) != 1 || res.Skipped[0] != base {
				t.Errorf("names skipped %q, want only %s (another image's name)", res.Skipped, base)
			}
			if insp, err := dockertest.Client(t).ImageInspect(ctx, base); err != nil || insp.Config.Labels[hruntime.LabelBuildPod] != "" {
				t.Errorf("the test image %s was renamed to the build: %v", base, err)
			}
			cli := dockertest.Client(t)
			insp, err := cli.ImageInspect(ctx, other)
			if err != nil {
				t.Fatalf("inspect %s: %v", other, err)
			}
			env := strings.Join(insp.Config.Env, " ")
			if !strings.Contains(env, "MESSAGE=hello-arg") {
				t.Errorf("env %q lacks the build arg", env)
			}
			for k, want := range map[string]string{"org.example.team": "shop", hruntime.LabelBuildInstance: instance, hruntime.LabelBuildPod: "p1"} {
				if got := insp.Config.Labels[k]; got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}
			built, err := d.ListBuilt(ctx, "p1")
			if err != nil || len(built) != 1 || !strings.Contains(strings.Join(built[0].Tags, " "), tag) {
				t.Errorf("ListBuilt: %+v %v, want the image tagged %s", built, err, tag)
			}

			bad := "FROM " + base + "\nCOPY missing.txt /m\n"
			_, err = d.Build(ctx, hruntime.BuildSpec{
				Tags: []string{tag + "-bad"}, Pod: "p1", Dockerfile: "Dockerfile", Recipe: bad,
				Context: contextTar(map[string]string{"Dockerfile": bad}),
			})
			if !errors.Is(err, hruntime.ErrBuild) || !strings.Contains(err.Error(), "missing.txt") || !strings.Contains(err.Error(), "build log (last lines)") {
				t.Errorf("failed build: %v, want ErrBuild naming missing.txt with the log", err)
			}
			t.Logf("failed build: %v", err)
		})
	}
}
