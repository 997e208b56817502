package sync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/internal/eventlog"
	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

// quotingEngine is the fake engine whose Create fails as Docker does for
// a user missing from the image: quoting the value.
type quotingEngine struct{ *synctest.Fake }

func (e quotingEngine) Create(_ context.Context, spec hruntime.ContainerSpec) (string, error) {
	return "", fmt.Errorf("create container %s: unable to find user %s: no matching entries in passwd file", spec.Name, spec.User)
}

const hiddenUserPod = `
version: v1beta1
id: web
containers:
  - name: app
    image: example.org/app:1
    user: Hunter2UserPw
`

// TestInterpolatedValuesNeverInEngineErrors: a value interpolated from a
// Compose project's .env or the host's compose.env (the pod's hidden
// values, whole or a part a parser split off) that the engine quotes in an
// error at create or start never reaches the pod's status, its events or
// the log.
func TestInterpolatedValuesNeverInEngineErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    manifest.Sourced
	}{
		{"whole value", manifest.Sourced{Hidden: []string{"Hunter2UserPw"}}},
		{"part of a value", manifest.Sourced{Hidden: []string{"Hunter2UserPw:/x:zz"}, HiddenParts: []string{"Hunter2UserPw"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, err := manifest.Decode([]byte(hiddenUserPod), manifest.Origin{Source: "test", File: "test.yaml"})
			if err != nil || len(ms) != 1 {
				t.Fatalf("decode: %v", err)
			}
			src := tc.s
			src.Manifest, src.Origin = ms[0].Manifest, ms[0].Origin
			var logs bytes.Buffer
			ev := eventlog.NewLog(100)
			s, err := hsync.New(quotingEngine{synctest.NewFake()}, hsync.Options{
				Instance: "unit", InfraImage: "example.org/pause:1", Interval: time.Hour,
			}, slog.New(slog.NewTextHandler(&logs, nil)), ev)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			s.SetDesired(hsync.Desired{Pods: []hsync.Pod{hsync.NewSourcedPod(src, "rev1")}, Ready: true})
			_ = s.SyncOnce(t.Context())

			p, ok := podStatus(s, "web")
			if !ok || p.Phase != hsync.PhaseFailed {
				t.Fatalf("pod %v phase %s, want failed", ok, p.Phase)
			}
			// The status shows the manifest itself (the user field): only
			// what it says about the pod is checked here.
			rep := s.Report()
			for i := range rep.Pods {
				rep.Pods[i].Manifest = nil
			}
			status, _ := json.Marshal(rep)
			evs, _ := json.Marshal(ev.List())
			for what, text := range map[string]string{"status": string(status), "events": string(evs), "log": logs.String()} {
				if strings.Contains(strings.ToLower(text), "hunter2userpw") {
					t.Errorf("%s shows the interpolated value: %s", what, text)
				}
			}
			if !strings.Contains(string(status), "unable to find user") {
				t.Errorf("status lost the engine's reason: %s", status)
			}
		})
	}
}

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

// TestLogOptionValuesNeverInEngineErrors (outside review of the
// host-access settings): log options' values are hidden in status, labels
// and reasons (they may hold a driver's credentials), but the engine's
// error about them is shown as it is: in the pod's message, the
// container's lastError and the events.
func TestLogOptionValuesNeverInEngineErrors(t *testing.T) {
	const secret = "S3cretT0ken"
	ev := eventlog.NewLog(100)
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
