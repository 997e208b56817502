package runtime

import (
	"errors"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
)

// Only the engine's "task ... already exists" marks a stale task; an
// engine going down or another start error must be retried, not answered
// by removing the container.
func TestStartErrorStaleTask(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		stale bool
	}{
		{name: "cut by an engine restart", err: errors.New("Error response from daemon: failed to create task for container: task 4f2a: already exists: unknown"), stale: true},
		{name: "conflict already exists", err: cerrdefs.ErrAlreadyExists.WithMessage("task 4f2a already exists"), stale: true},
		{name: "engine going down", err: errors.New("Error response from daemon: transport is closing: unavailable")},
		{name: "infra not running", err: errors.New("Error response from daemon: cannot join network of a non running container: 1d62")},
		{name: "port taken", err: errors.New("driver failed programming external connectivity: Bind for 127.0.0.1:8080 failed: port is already allocated")},
		{name: "name exists", err: cerrdefs.ErrConflict.WithMessage("container name already exists")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsStaleTask(startError(tt.err)); got != tt.stale {
				t.Errorf("IsStaleTask(startError(%q)) = %v, want %v", tt.err, got, tt.stale)
			}
		})
	}
}
