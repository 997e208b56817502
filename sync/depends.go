package sync

import (
	"fmt"
	"strings"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
)

// ReasonWaiting marks a Pending pod that waits for the pods it depends on.
const ReasonWaiting = "WaitingForDependency"

// dependencyWaits returns, for every pod of the plan that would change but
// depends on a pod not in its condition, why it waits: a dependency that
// the plan changes too (it goes first), or whose containers (in actual)
// are not there, running, healthy or completed as asked. A waiting pod is
// left as it is: what runs of it keeps running.
func dependencyWaits(plan Plan, actual []hruntime.Container) map[string]string {
	changing := map[string]bool{}
	for _, pp := range plan.Pods {
		if !pp.Unchanged() {
			changing[pp.ID] = true
		}
	}
	byPod := map[string][]hruntime.Container{}
	for _, c := range actual {
		// A dependency's condition is its app containers': an init
		// container's run is over before they start.
		if c.Slot() != hruntime.InfraName && !podspec.IsInitSlot(c.Slot()) {
			byPod[c.Pod()] = append(byPod[c.Pod()], c)
		}
	}
	waits := map[string]string{}
	cycles := dependencyCycles(plan)
	for _, pp := range plan.Pods {
		// Only a create or recreate waits: a restart of what runs does not.
		if pp.Unchanged() || pp.Desired == nil || pp.restartsOnly() {
			continue
		}
		if c := cycles[pp.ID]; c != "" {
			waits[pp.ID] = "waiting forever: dependency cycle " + c
			continue
		}
		var why []string
		for _, d := range pp.Desired.Manifest.Dependencies() {
			if msg := dependencyWait(d, changing[d.Pod], byPod[d.Pod]); msg != "" {
				why = append(why, msg)
			}
		}
		if len(why) > 0 {
			waits[pp.ID] = "waiting for " + strings.Join(why, "; ")
		}
	}
	return waits
}

// dependencyCycles names, for every desired pod on a cycle of dependsOn,
// the cycle (validation rejects such pods; this holds for any set).
func dependencyCycles(plan Plan) map[string]string {
	deps := map[string][]string{}
	for _, pp := range plan.Pods {
		if pp.Desired != nil {
			for _, d := range pp.Desired.Manifest.Dependencies() {
				deps[pp.ID] = append(deps[pp.ID], d.Pod)
			}
		}
	}
	return manifest.DependencyCycles(deps)
}

// dependencyWait says why dependency d is not in its condition, or "".
func dependencyWait(d manifest.Dependency, changing bool, cs []hruntime.Container) string {
	cond := d.Condition
	if cond == "" {
		cond = manifest.DependencyStarted
	}
	want := fmt.Sprintf("pod %s to be %s", d.Pod, strings.ToLower(cond))
	switch {
	case changing:
		return want + " (it is being changed)"
	case len(cs) == 0:
		return want + " (it has no container)"
	}
	for _, c := range cs {
		switch cond {
		case manifest.DependencyCompleted:
			if c.State != hruntime.StateExited || c.ExitCode != 0 {
				return fmt.Sprintf("%s (container %s is %s)", want, c.Slot(), stateText(c))
			}
		case manifest.DependencyHealthy:
			if !c.Running() || c.Health == hruntime.HealthStarting || c.Health == hruntime.HealthUnhealthy {
				return fmt.Sprintf("%s (container %s is %s)", want, c.Slot(), healthText(c))
			}
		default:
			if !c.Running() {
				return fmt.Sprintf("%s (container %s is %s)", want, c.Slot(), c.State)
			}
		}
	}
	return ""
}

func healthText(c hruntime.Container) string {
	if c.Health == "" || !c.Running() {
		return stateText(c)
	}
	return c.State + " (" + c.Health + ")"
}
