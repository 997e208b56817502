package sync_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// fieldSyncer is a syncer on fake whose host address is hostIP (or
// fails with hostErr).
func fieldSyncer(t *testing.T, fake *synctest.Fake, hostIP string, hostErr error) *hsync.Syncer {
	t.Helper()
	s, err := hsync.New(fake, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second,
		Concurrency: 4, Prune: true, StateDir: t.TempDir(),
		HostAddress: func(context.Context) (string, error) { return hostIP, hostErr },
	}, slog.New(slog.DiscardHandler), eventlog.NewLog(100))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// envOf is the env of the pod's container in slot, as created.
func envOf(t *testing.T, fake *synctest.Fake, pod, slot string) []string {
	t.Helper()
	spec, ok := specsOf(t, fake, pod)[slot]
	if !ok {
		t.Fatalf("pod %s has no container %s", pod, slot)
	}
	return spec.Env
}

// The pod's address is its infra container's, which a pod of one
// container reading it gets; the host's is what the host says; both are
// filled in in env values and args when the container is created.
func TestFieldsOfTheRunningPodAreFilledInAtCreate(t *testing.T) {
	fake := synctest.NewFake()
	s := fieldSyncer(t, fake, "192.0.2.2", nil)
	pod := decodePod(t, `
version: v1beta1
id: web
containers:
  - name: app
    image: example.org/app:1
    args: ["--listen={{hostlet-field:status.podIP}}:9100"]
    env:
      - {name: POD_IP, value: "{{hostlet-field:status.podIP}}"}
      - {name: UPSTREAM, value: "http://{{hostlet-field:status.hostIP}}:8126"}
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	specs := specsOf(t, fake, "web")
	if _, ok := specs[hruntime.InfraName]; !ok {
		t.Fatalf("a pod of one container reading its address has no infra container: %v", specs)
	}
	list, _ := fake.List(t.Context())
	infraIP := ""
	for _, c := range list {
		if c.Pod() == "web" && c.Slot() == hruntime.InfraName {
			infraIP = c.IP
		}
	}
	if infraIP == "" {
		t.Fatal("the infra container has no address")
	}
	env := envOf(t, fake, "web", "app")
	for _, want := range []string{"POD_IP=" + infraIP, "UPSTREAM=http://192.0.2.2:8126"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %v lacks %s", env, want)
		}
	}
	if got := specs["app"].Args; !slices.Equal(got, []string{"--listen=" + infraIP + ":9100"}) {
		t.Errorf("args %v, want the infra container's address in them", got)
	}
	if args := pod.Manifest.Containers[0].Args; !strings.Contains(args[0], "{{hostlet-field:") {
		t.Errorf("the desired manifest's args were changed in place: %v", args)
	}

	// Nothing changed: the next sync recreates nothing (the hash sees
	// the token, not the address).
	fake.Reset()
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	if calls := fake.Calls(); slices.ContainsFunc(calls, func(c synctest.Call) bool { return c.Method == "Create" || c.Method == "Remove" }) {
		t.Errorf("a sync with nothing changed made %v", calls)
	}
}

// A host whose address cannot be told fails the pod, saying why, and
// creates no container reading it.
func TestAnUnknownHostAddressFailsThePod(t *testing.T) {
	fake := synctest.NewFake()
	s := fieldSyncer(t, fake, "", errors.New("no default route"))
	pod := decodePod(t, `
version: v1beta1
id: web
containers:
  - name: app
    image: example.org/app:1
    env:
      - {name: HOST_IP, value: "{{hostlet-field:status.hostIP}}"}
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	err := s.SyncOnce(t.Context())
	if err == nil || !strings.Contains(err.Error(), "env HOST_IP: no default route") {
		t.Fatalf("sync error %v, want one naming HOST_IP and the cause", err)
	}
	if _, ok := specsOf(t, fake, "web")["app"]; ok {
		t.Error("a container was created without its env")
	}
}

// The pod's address is asked of the engine once an apply, however many
// tokens name it.
func TestThePodAddressIsAskedOnceAnApply(t *testing.T) {
	fake := synctest.NewFake()
	s := fieldSyncer(t, fake, "192.0.2.2", nil)
	value := strings.Repeat("{{hostlet-field:status.podIP}},", 1000)
	pod := decodePod(t, `
version: v1beta1
id: web
containers:
  - name: app
    image: example.org/app:1
    args: ["{{hostlet-field:status.podIP}}"]
    env:
      - {name: MANY, value: "`+value+`"}
  - name: side
    image: example.org/side:1
    env:
      - {name: IP, value: "{{hostlet-field:status.podIP}}"}
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	if err := s.SyncOnce(t.Context()); err != nil {
		t.Fatal(err)
	}
	inspects := 0
	for _, c := range fake.Calls() {
		if c.Method == "Inspect" {
			inspects++
		}
	}
	if inspects != 1 {
		t.Errorf("%d inspects for the pod's address, want 1", inspects)
	}
}
