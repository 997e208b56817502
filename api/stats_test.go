package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/api"
	hruntime "github.com/hostlet/hostlet/runtime"
)

type fakeMachine struct {
	m   hruntime.Machine
	err error
}

func (f fakeMachine) Machine(context.Context) (hruntime.Machine, error) { return f.m, f.err }

// TestStatsFromMachineReader: with a MachineReader (stats.cadvisor),
// /stats shows its cores, memory and time in the same document; the load
// average and the pod counts are hostlet's own. A reader that fails is a
// 502 naming it, on /stats and on /stats/{pod}/{container}.
func TestStatsFromMachineReader(t *testing.T) {
	at := time.Date(2026, 12, 3, 12, 39, 1, 0, time.UTC)
	srv := newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()})
	srv.HandleStats(fakeStats{}, fakeMachine{m: hruntime.Machine{Time: at, Cores: 64, MemoryBytes: 1 << 40, MemoryAvailableBytes: 1 << 39}})
	rec := do(srv, http.MethodGet, "/stats", nil, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /stats: %d %s", rec.Code, rec.Body)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"time", "cores", "memoryBytes", "memoryAvailableBytes", "loadAverage", "pods", "containers"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("GET /stats has no %q: %s", k, rec.Body)
		}
	}
	if len(keys) != 7 {
		t.Errorf("GET /stats has %d keys, want 7: %s", len(keys), rec.Body)
	}
	var ms api.MachineStats
	if err := json.Unmarshal(rec.Body.Bytes(), &ms); err != nil {
		t.Fatal(err)
	}
	if !ms.Time.Equal(at) || ms.Cores != 64 || ms.MemoryBytes != 1<<40 || ms.MemoryAvailableBytes != 1<<39 || ms.Pods != 1 || ms.Containers != 1 {
		t.Errorf("machine stats %+v", ms)
	}

	failing := newServer(t, api.Options{Loopback: true}, &fakeSyncer{report: sampleReport()})
	down := errors.New("cadvisor http://127.0.0.1:8080: GET /api/v1.3/machine: dial tcp 127.0.0.1:8080: connect: connection refused")
	failing.HandleStats(fakeStats{err: down}, fakeMachine{err: down})
	for _, path := range []string{"/stats", "/stats/web/app"} {
		rec := do(failing, http.MethodGet, path, nil, "")
		if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "connection refused") || !strings.Contains(rec.Body.String(), "cadvisor http://127.0.0.1:8080") {
			t.Errorf("GET %s with the cAdvisor down: %d %s", path, rec.Code, rec.Body)
		}
	}
}
