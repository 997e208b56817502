package compose_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/compose"
)

// TestUpdateConfig: deploy.update_config's monitor is the pod's
// minReadySeconds and failure_action its rollback policy; other keys of
// it are refused by name.
func TestUpdateConfig(t *testing.T) {
	tests := []struct {
		name         string
		update       string
		rollback     string
		minReady     int64
		wantErr      string
		wantNoUpdate bool
	}{
		{name: "none", update: "", wantNoUpdate: true},
		{name: "rollback", update: "{failure_action: rollback, monitor: 30s}", rollback: manifest.RollbackAuto, minReady: 30},
		{name: "pause holds", update: "{failure_action: pause}", rollback: manifest.RollbackHold},
		{name: "continue never rolls back", update: "{failure_action: continue, monitor: 1500ms}", rollback: manifest.RollbackNever, minReady: 2},
		{name: "unknown action", update: "{failure_action: retry}", wantErr: `deploy.update_config.failure_action: "retry" is not one of rollback, pause, continue`},
		{name: "swarm scheduling refused", update: "{parallelism: 2}", wantErr: "deploy.update_config.parallelism"},
		{name: "monitor too long", update: "{monitor: 99999999999h}", wantErr: "deploy.update_config.monitor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			y := "services:\n  web:\n    image: busybox\n"
			if tt.update != "" {
				y += "    deploy:\n      update_config: " + tt.update + "\n"
			}
			pods, errs := load(t, mapFiles{"compose.yaml": y}, compose.Options{})
			if tt.wantErr != "" {
				if !strings.Contains(strings.Join(errs, "\n"), tt.wantErr) {
					t.Fatalf("errors %q, want one containing %q", errs, tt.wantErr)
				}
				return
			}
			if len(errs) > 0 || len(pods) != 1 {
				t.Fatalf("errors %q, %d pods", errs, len(pods))
			}
			m := pods[0].Manifest
			if m.Rollback != tt.rollback || m.MinReadySeconds != tt.minReady {
				t.Fatalf("rollback %q minReadySeconds %d, want %q %d", m.Rollback, m.MinReadySeconds, tt.rollback, tt.minReady)
			}
		})
	}
}
