package runtime

import (
	"context"
	"errors"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/client"
)

// Error classes. Every error the Docker implementation returns that comes
// from the engine is classified by translate, so callers can test it with
// errors.Is without knowing about Docker's error types.
var (
	// ErrNotFound: the container, image or volume does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the operation conflicts with the object's state, e.g. a
	// container name already in use or a volume still in use.
	ErrConflict = errors.New("conflict")
	// ErrImagePull: pulling an image failed (registry unreachable, image or
	// tag unknown, access denied). The error text carries the engine's
	// message.
	ErrImagePull = errors.New("image pull failed")
	// ErrImageNeverPull: the image is absent and the pull policy is Never.
	// Such errors also match ErrNotFound.
	ErrImageNeverPull = errors.New("image not present and pull policy is Never")
	// ErrUnavailable: the engine cannot be reached.
	ErrUnavailable = errors.New("engine unavailable")
	// ErrStaleTask: the engine cannot start a container because it still
	// holds a task for it ("task ... already exists", the container
	// Exited (128)): an engine restart cut its start. Such a container
	// never starts again; it must be created anew.
	ErrStaleTask = errors.New("container holds a stale task")
)

// IsStaleTask reports whether err (or an error it wraps) is ErrStaleTask.
func IsStaleTask(err error) bool { return errors.Is(err, ErrStaleTask) }

// startError classifies the error of starting container id. A stale task
// is known only by the engine's text, which names the container's own ID
// with "already exists" in its forms over the releases (`task <id>: already
// exists`, `container "<id>": already exists`, `container with id exists:
// <id>`, `.../<id>: file exists`), or by containerd's bare `id already in
// use` for the task of the container being started; no other "already
// exists" (a network endpoint's name, a port, an address in use) counts.
func startError(id string, err error) error {
	t := translate(err)
	if t == nil || errors.Is(t, ErrUnavailable) || len(id) != 64 {
		return t
	}
	msg := err.Error()
	// containerd's own answer to creating a task whose ID (the container's)
	// it still holds names no ID: the start request names the container.
	if strings.HasSuffix(msg, ": id already in use") || msg == "id already in use" {
		return classify(t, ErrStaleTask)
	}
	if !strings.Contains(msg, id) {
		return t
	}
	for _, s := range []string{"already exists", "with id exists", "file exists", "already in use"} {
		if strings.Contains(msg, s) {
			return classify(t, ErrStaleTask)
		}
	}
	return t
}

// IsNotFound reports whether err (or an error it wraps) is ErrNotFound.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsConflict reports whether err (or an error it wraps) is ErrConflict.
func IsConflict(err error) bool { return errors.Is(err, ErrConflict) }

// classified is an engine error tagged with one or more of our classes. Its
// text is the engine's text; errors.Is matches both the classes and the
// original error.
type classified struct {
	kinds []error
	err   error
}

func (e *classified) Error() string { return e.err.Error() }

func (e *classified) Unwrap() []error {
	return append(append([]error(nil), e.kinds...), e.err)
}

// classify tags err with the given classes (err must not be nil).
func classify(err error, kinds ...error) error {
	return &classified{kinds: kinds, err: err}
}

// translate is the one place Docker's error classes become ours. It returns
// nil for nil, context errors and already classified errors unchanged, and
// otherwise tags the error with the matching class, if any.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var c *classified
	if errors.As(err, &c) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	switch {
	case cerrdefs.IsNotFound(err):
		return classify(err, ErrNotFound)
	case cerrdefs.IsConflict(err), cerrdefs.IsAlreadyExists(err):
		return classify(err, ErrConflict)
	case cerrdefs.IsUnavailable(err), client.IsErrConnectionFailed(err):
		return classify(err, ErrUnavailable)
	case cerrdefs.IsInternal(err) && conflictText(err.Error()):
		// An engine's 500 that says a conflict (Podman's).
		return classify(err, ErrConflict)
	}
	return err
}

// podmanConflicts are the texts of Podman's answers that are conflicts
// with an object's state, which it sends as 500 Internal Server Error
// (Docker: 409 Conflict): its error kinds (libpod's define.ErrCtrState,
// ErrNetworkInUse, ErrPodExists, ErrCtrExists, …) as they end its
// messages.
var podmanConflicts = []string{
	": container state improper",
	": network is being used",
	": volume is being used",
	": image is in use by a container",
	": pod already exists",
	": container already exists",
	": network already exists",
	"is already in use by",
}

// conflictText reports whether an engine's error text, whatever its
// status code, says a conflict with an object's state.
func conflictText(msg string) bool {
	for _, s := range podmanConflicts {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
