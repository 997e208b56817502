package sync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// secondTag tags the demo image as a second image, removed at the end of
// the test.
func (e *env) secondTag(what string) string {
	e.t.Helper()
	ref := "hostlet-test-" + what + "-" + e.inst + ":2"
	if err := e.cli.ImageTag(e.ctx, e.img, ref); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = e.cli.ImageRemove(ctx, ref, image.RemoveOptions{})
	})
	return ref
}

// TestAChosenNameIsKeptThroughAKillAtEachStepOfARecreate (real engine):
// the container keeps the name its manifest chose through a recreate, and
// a kill -9 after each step of it (create under hostlet's own name, stop
// and remove the old one, rename, start) is finished by the next hostlet.
func TestAChosenNameIsKeptThroughAKillAtEachStepOfARecreate(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	checkRecreateCutShort(t, e.rt, e.inst, e.img, e.img, e.secondTag("named"), name)
	r := e.inspect(name)
	if r.Config.Labels[hruntime.LabelName] != name || r.Config.Labels[hruntime.LabelNameProof] == "" {
		t.Errorf("labels %v: want the chosen name and its proof", r.Config.Labels)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAChosenNameHeldByAnotherContainerIsAConflict (real engine): a name
// held by a container hostlet did not make, even one that carries the
// pod's labels and claims the name, is a conflict naming it: the holder
// is left running, and the pod's container is not made.
func TestAChosenNameHeldByAnotherContainerIsAConflict(t *testing.T) {
	e := newEnv(t)
	name := "hostlet-test-" + e.inst
	forged := map[string]string{
		hruntime.LabelManaged: "true", hruntime.LabelInstance: e.inst, hruntime.LabelPod: "web", hruntime.LabelContainer: "app",
		hruntime.LabelName: name, hruntime.LabelNameProof: strings.Repeat("0", 32),
	}
	id := e.outsider(e.img, name, forged, nil, []string{"/demo", "pause"})
	before := e.inspect(id)
	e.set(namedPod(t, e.img, name))
	err := e.s.SyncOnce(e.ctx)
	st := e.mustStatus("web")
	for _, got := range []string{st.Message, errText(err)} {
		if st.Phase == hsync.PhaseRunning || !strings.Contains(got, `container name "`+name+`" is held by container `+id[:12]) ||
			!strings.Contains(got, "a container hostlet did not make") {
			t.Errorf("pod %s %s: %q, want a conflict naming the holder", st.Phase, st.Reason, got)
		}
	}
	if got := slotOf(t, e.rt); len(got) != 0 {
		t.Errorf("containers of the pod: %+v, want none", got)
	}
	e.untouched("the holder", id, before)
}
