package sync_test

// Attacks on the host-access settings in the syncer (outside review). A
// failing test is a finding.

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/events"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// logOptEngine is the fake engine with Docker's answer to a log option
// it cannot parse: the daemon validates log options at create and quotes
// the value (fluentd: `invalid fluentd-address (%s)`; gelf: `cannot
// connect to GELF endpoint: %s`; splunk: `failed to parse %s as url
// value`; url.Parse errors quote the whole URL, credentials included).
type logOptEngine struct{ *synctest.Fake }

func (e logOptEngine) Create(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	if v := spec.LogOptions["fluentd-address"]; v != "" {
		return "", fmt.Errorf("create container %q: Error response from daemon: invalid fluentd-address (%s): parse %q: invalid port", spec.Name, v, v)
	}
	return e.Fake.Create(ctx, spec)
}

// Log options' values are hidden in status, labels and reasons (they may
// hold a driver's credentials), but the engine's error about them is
// shown as it is: in the pod's message, the container's lastError and the
// events.
func TestAttackPolicyLogOptionInEngineError(t *testing.T) {
	const secret = "S3cretT0ken"
	ev := events.NewLog(100)
	s, err := hsync.New(logOptEngine{synctest.NewFake()}, hsync.Options{
		Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Second, Concurrency: 4, Prune: true,
	}, slog.New(slog.DiscardHandler), ev)
	if err != nil {
		t.Fatal(err)
	}
	pod := decodePod(t, `
version: v1beta1
id: web
containers:
  - name: app
    image: example.org/app:1
    logging: {driver: fluentd, options: {fluentd-address: "tcp://ingest:`+secret+`@logs.example.org:24224x"}}
`)
	s.SetDesired(hsync.Desired{Pods: []hsync.Pod{pod}, Ready: true})
	_ = s.SyncOnce(t.Context())
	b, _ := json.Marshal(s.Report())
	if strings.Contains(string(b), secret) {
		t.Errorf("the status shows a log option's value (from the engine's error): %s", b)
	}
	eb, _ := json.Marshal(ev.List())
	if strings.Contains(string(eb), secret) {
		t.Errorf("the events show a log option's value (from the engine's error): %s", eb)
	}
}
