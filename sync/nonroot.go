package sync

import (
	"context"
	"fmt"

	"github.com/hostlet/hostlet/manifest"
)

// checkNonRoot checks, before anything running is stopped, each container
// the apply creates (the init containers too, when an app container is
// created) that must not run as root and names no user: its image's USER
// must be a numeric user other than 0, as the kubelet checks.
func (ap *podApplication) checkNonRoot(ctx context.Context) error {
	for _, c := range ap.m.Containers {
		if creates(ap.apps[c.Name].Action) {
			if err := ap.nonRoot(ctx, c); err != nil {
				return err
			}
		}
	}
	if !ap.createsApp() {
		return nil
	}
	for _, c := range ap.m.InitContainers {
		if err := ap.nonRoot(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// nonRoot checks container c's image's user when c must not run as root
// and names no user (validation checked one it names).
func (ap *podApplication) nonRoot(ctx context.Context, c manifest.Container) error {
	if !c.RunAsNonRoot || c.User != "" {
		return nil
	}
	user, err := ap.rt.ImageUser(ctx, c.Image)
	if err != nil {
		return inStep(errStepCreate, fmt.Errorf("container %s: runAsNonRoot: %w", c.Name, err))
	}
	if why := manifest.RootUser(user); why != "" {
		return inStep(errStepCreate, fmt.Errorf("container %s: runAsNonRoot, but image %s %s: set a numeric non-root user (runAsUser)", c.Name, c.Image, why))
	}
	return nil
}
