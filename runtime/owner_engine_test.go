package runtime_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/hostlet/hostlet/internal/testkit"
	"github.com/hostlet/hostlet/internal/testkit/dockertest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// TestListAndEventsOnlyOfContainersHostletMade: on the real engine, a
// container that carries every label of a pod's container (as a
// builder's step container of a Dockerfile with those LABELs does) but
// not the name hostlet gives them is neither listed nor are its events
// delivered; it is counted (Unproven, UnprovenEvents) and left running.
func TestListAndEventsOnlyOfContainersHostletMade(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dockertest.Docker(t)
	cli := dockertest.Client(t)
	evCtx, stop := context.WithCancel(ctx)
	defer stop()
	events := d.Events(evCtx)

	own := spec(t, d, "victim", "app")
	ownID := mustRun(t, ctx, d, own)

	// Forged: the labels copied, engine-chosen names; one named as
	// another instance names the pod's container. Each exits with 3.
	forge := func(name string) string {
		t.Helper()
		resp, err := cli.ContainerCreate(ctx, &container.Config{
			Image: own.Image, Labels: maps.Clone(own.Labels), Env: []string{"EXIT_AFTER=200ms", "EXIT_CODE=3"},
		}, nil, nil, nil, name)
		if err != nil {
			t.Fatal(err)
		}
		if err := cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		return resp.ID
	}
	forged := map[string]bool{
		forge(""): true,
		forge(hruntime.ContainerName(dockertest.Instance(t), "victim", "app", own.Labels[hruntime.LabelHash])): true,
	}

	// A container of ours that dies after the forged ones: once its die
	// event is here, theirs would have been.
	last := spec(t, d, "victim", "last")
	last.Env = []string{"EXIT_AFTER=1500ms", "EXIT_CODE=4"}
	lastID := mustRun(t, ctx, d, last)
	deadline := time.After(time.Minute)
wait:
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("event channel closed early")
			}
			if forged[ev.ContainerID] {
				t.Errorf("delivered an event of a forged container: %+v", ev)
			}
			if ev.ContainerID == lastID && ev.Action == "die" {
				break wait
			}
		case <-deadline:
			t.Fatal("no die event of our own container within a minute")
		}
	}
	for id := range forged {
		testkit.WaitFor(t, 30*time.Second, func() (bool, string) {
			r, err := cli.ContainerInspect(ctx, id)
			return err == nil && r.State.Status == "exited", fmt.Sprintf("forged container %s: %v", id, err)
		})
	}
	if n := d.UnprovenEvents(); n < 4 {
		t.Errorf("UnprovenEvents = %d, want the forged containers' start and die at least", n)
	}

	list, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, c := range list {
		listed[c.ID] = c.Name
	}
	if len(list) != 2 || listed[ownID] != own.Name || listed[lastID] != last.Name {
		t.Errorf("List = %v, want exactly our two containers, %s and %s", listed, own.Name, last.Name)
	}
	if n := d.Unproven(); n != len(forged) {
		t.Errorf("Unproven = %d, want %d", n, len(forged))
	}
	for id := range forged {
		if _, err := cli.ContainerInspect(ctx, id); err != nil {
			t.Errorf("forged container %s: %v, want left alone", id, err)
		}
	}
}
