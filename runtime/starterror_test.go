package runtime

import (
	"errors"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
)

// Only an engine error naming the container's own ID as existing already
// marks a stale task; an engine going down, another object that exists, or
// another start error must be retried, not answered by removing the
// container.
func TestStartErrorStaleTask(t *testing.T) {
	id := strings.Repeat("4f2a", 16)
	other := strings.Repeat("d52a", 16)
	tests := []struct {
		name  string
		err   error
		stale bool
	}{
		{name: "task exists", err: errors.New("Error response from daemon: failed to create task for container: task " + id + ": already exists: unknown"), stale: true},
		{name: "container exists", err: cerrdefs.ErrAlreadyExists.WithMessage(`container "` + id + `": already exists`), stale: true},
		{name: "runc id exists", err: errors.New("OCI runtime create failed: container with id exists: " + id + ": unknown"), stale: true},
		{name: "shim bundle exists", err: errors.New("failed to create task for container: failed to start shim: mkdir /run/containerd/io.containerd.runtime.v2.task/moby/" + id + ": file exists"), stale: true},
		{name: "task id in use", err: errors.New("Error response from daemon: id already in use"), stale: true},
		{name: "address in use", err: errors.New("Error response from daemon: driver failed programming external connectivity: listen tcp4 127.0.0.1:8080: bind: address already in use")},
		{name: "another task exists", err: errors.New("failed to create task for container: task " + other + ": already exists")},
		{name: "endpoint name exists", err: errors.New("failed to create task for container: endpoint with name hostlet_tasks_web already exists in network bridge")},
		{name: "engine going down", err: errors.New("Error response from daemon: transport is closing: unavailable")},
		{name: "infra not running", err: errors.New("Error response from daemon: cannot join network of a non running container: " + other)},
		{name: "port taken", err: errors.New("driver failed programming external connectivity on endpoint hostlet_upd_app (" + other + "): Bind for 127.0.0.1:8080 failed: port is already allocated")},
		{name: "name exists", err: cerrdefs.ErrConflict.WithMessage("container name already exists")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsStaleTask(startError(id, tt.err)); got != tt.stale {
				t.Errorf("IsStaleTask(startError(%q)) = %v, want %v", tt.err, got, tt.stale)
			}
		})
	}
}
