package runtime

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/events"
)

func forgedAttrs(instance, name string) map[string]string {
	return map[string]string{
		LabelManaged: "true", LabelInstance: instance, LabelPod: "victim", LabelContainer: "app", LabelHash: "v1:h",
		attrName: name, "exitCode": "1",
	}
}

// TestEventsOfUnprovenContainersAreDropped: an engine event is delivered
// only when its attributes (the container's labels and name) prove the
// container hostlet's; the others are counted, logged once per container.
func TestEventsOfUnprovenContainersAreDropped(t *testing.T) {
	var buf bytes.Buffer
	d := &Docker{instance: "inst", log: slog.New(slog.NewTextHandler(&buf, nil))}
	own := ContainerName("inst", "victim", "app", "v1:h")
	for _, tc := range []struct {
		what  string
		attrs map[string]string
		want  bool
	}{
		{"hostlet's container", forgedAttrs("inst", own), true},
		{"a builder's step container with the pod's labels", forgedAttrs("inst", "eager_turing"), false},
		{"the same once more", forgedAttrs("inst", "eager_turing"), false},
		{"no name attribute", forgedAttrs("inst", ""), false},
		{"another instance's labels", forgedAttrs("other", own), false},
	} {
		ev := toEvent(events.Message{Action: "die", Actor: events.Actor{ID: tc.attrs[attrName] + "-id", Attributes: tc.attrs}})
		if got := d.provenEvent(ev); got != tc.want {
			t.Errorf("%s: delivered %v, want %v", tc.what, got, tc.want)
		}
	}
	if n := d.UnprovenEvents(); n != 4 {
		t.Errorf("UnprovenEvents = %d, want 4", n)
	}
	if n := strings.Count(buf.String(), "dropping the engine events"); n != 3 {
		t.Errorf("logged %d times, want once per container (3):\n%s", n, buf.String())
	}
}

// TestUnprovenReportIsBounded: warnings are once per container ID, and
// what the report remembers stays bounded however many containers come
// and go.
func TestUnprovenReportIsBounded(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var r unprovenReport
	c := func(id string) Container {
		return Container{ID: id, Name: "x", Labels: map[string]string{LabelPod: "victim", LabelContainer: "app"}}
	}
	r.listedUnproven(log, map[string]Container{"a": c("a"), "b": c("b")})
	r.listedUnproven(log, map[string]Container{"a": c("a"), "b": c("b")})
	r.listedUnproven(log, map[string]Container{"b": c("b")})
	if n, _ := r.counts(); n != 1 {
		t.Errorf("unproven after the last list = %d, want 1", n)
	}
	if n := strings.Count(buf.String(), "level=WARN"); n != 2 {
		t.Errorf("%d warnings for two containers listed three times, want 2:\n%s", n, buf.String())
	}
	r.listedUnproven(log, nil)
	if n, _ := r.counts(); n != 0 || len(r.listed) != 0 {
		t.Errorf("after a list without any: %d", n)
	}

	for i := range 3 * maxReported {
		if !r.droppedEvent(fmt.Sprint(i)) {
			t.Fatalf("event of a new container %d not reported as new", i)
		}
		if r.droppedEvent(fmt.Sprint(i)) {
			t.Fatalf("second event of container %d reported as new", i)
		}
	}
	if len(r.evented) != maxReported || len(r.order) != maxReported {
		t.Errorf("remembers %d IDs (%d in order), want at most %d", len(r.evented), len(r.order), maxReported)
	}
	if _, events := r.counts(); events != 6*maxReported {
		t.Errorf("events counted = %d, want %d", events, 6*maxReported)
	}
}

// TestListedNameIsTheProvenOne: of a list entry's names (legacy links add
// "/linker/alias" names), the one that proves the container is its name.
func TestListedNameIsTheProvenOne(t *testing.T) {
	own := ContainerName("inst", "victim", "app", "v1:h")
	labels := forgedAttrs("inst", "")
	for _, tc := range []struct {
		names []string
		want  string
		ok    bool
	}{
		{[]string{"/" + own}, own, true},
		{[]string{"/linker/alias", "/" + own}, own, true},
		{[]string{"/eager_turing"}, "", false},
		{[]string{"/linker/" + own}, "", false},
		{nil, "", false},
	} {
		got, ok := Owner{Instance: "inst"}.provenName(tc.names, "", labels)
		if got != tc.want || ok != tc.ok {
			t.Errorf("provenName(%q) = %q, %v; want %q, %v", tc.names, got, ok, tc.want, tc.ok)
		}
	}
}
