package sync

import (
	"fmt"
	"sort"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// Action is what a plan does to one container slot.
type Action string

// Actions, in the order Apply carries them out within a pod.
const (
	// ActionNone leaves the container as it is.
	ActionNone Action = ""
	// ActionCreate creates and starts a container that does not exist.
	ActionCreate Action = "create"
	// ActionRecreate stops and removes the container and creates a new one.
	ActionRecreate Action = "recreate"
	// ActionRestart starts a stopped container again, or restarts one whose
	// network namespace was lost; the container keeps its ID.
	ActionRestart Action = "restart"
	// ActionRemove stops and removes the container.
	ActionRemove Action = "remove"
)

// Change is the plan for one container slot of a pod.
type Change struct {
	// Container is the slot's name; hruntime.InfraName for the infra container.
	Container string `json:"container"`
	Action    Action `json:"action"`
	// Reasons say why, field by field; never env values.
	Reasons []string `json:"reasons,omitempty"`
	// Current is the container now in the slot, if any.
	Current *hruntime.Container `json:"-"`
}

// PodPlan is the plan for one pod.
type PodPlan struct {
	ID       string `json:"id"`
	Source   string `json:"source"`
	Revision string `json:"revision,omitempty"`
	// Desired is nil when the pod is to be removed.
	Desired *Pod `json:"-"`
	// Current holds the pod's containers as listed.
	Current []hruntime.Container `json:"-"`
	// Changes lists every slot, app containers in manifest order, then the
	// infra container, then containers to remove.
	Changes []Change `json:"changes"`
	// infraWait: the engine is restarting the pod's infra container, so the
	// app containers' network recovery waits for it to run again.
	infraWait bool
}

// Remove reports whether the whole pod goes away.
func (p PodPlan) Remove() bool { return p.Desired == nil }

// Unchanged reports whether the plan leaves the pod as it is.
func (p PodPlan) Unchanged() bool {
	for _, c := range p.Changes {
		if c.Action != ActionNone {
			return false
		}
	}
	return true
}

// Plan is the difference between the desired pods and the engine.
type Plan struct {
	// Pods in ID order.
	Pods []PodPlan `json:"pods"`
}

// Counts counts app containers by action; infra containers never count.
type Counts struct {
	Create    int `json:"create"`
	Recreate  int `json:"recreate"`
	Restart   int `json:"restart"`
	Remove    int `json:"remove"`
	Unchanged int `json:"unchanged"`
}

// Counts returns the plan's app-container counts.
func (p Plan) Counts() Counts {
	var c Counts
	for _, pp := range p.Pods {
		for _, ch := range pp.Changes {
			if ch.Container == hruntime.InfraName {
				continue
			}
			switch ch.Action {
			case ActionCreate:
				c.Create++
			case ActionRecreate:
				c.Recreate++
			case ActionRestart:
				c.Restart++
			case ActionRemove:
				c.Remove++
			default:
				c.Unchanged++
			}
		}
	}
	return c
}

// Changed reports whether the plan changes anything.
func (p Plan) Changed() bool {
	for _, pp := range p.Pods {
		if !pp.Unchanged() {
			return true
		}
	}
	return false
}

// PlanOptions are the inputs of a plan besides the two sets.
type PlanOptions struct {
	// Prune removes managed pods that are no longer desired. Callers turn it
	// off until every source has delivered its first set.
	Prune bool
	// Recover names pods whose infra container died: their app containers
	// restart to join its new network namespace.
	Recover map[string]bool
	// EnvHasher hashes desired env values to compare them with those the
	// containers' labels recorded; nil compares none (reasons then never
	// say an env value changed).
	EnvHasher *EnvHasher
}

// MakePlan compares desired pods with the containers one list call
// returned. It is pure: the same inputs give the same plan, in ID order.
func MakePlan(desired []Pod, actual []hruntime.Container, opts PlanOptions) Plan {
	byPod := map[string][]hruntime.Container{}
	for _, c := range actual {
		byPod[c.Pod()] = append(byPod[c.Pod()], c)
	}
	var plan Plan
	seen := map[string]bool{}
	for i := range desired {
		p := &desired[i]
		seen[p.Manifest.ID] = true
		plan.Pods = append(plan.Pods, planPod(p, byPod[p.Manifest.ID], opts.Recover[p.Manifest.ID], opts.EnvHasher))
	}
	if opts.Prune {
		for id, cs := range byPod {
			if seen[id] {
				continue
			}
			pp := PodPlan{ID: id, Current: cs}
			sortContainers(cs)
			for j := range cs {
				c := cs[j]
				pp.Source, pp.Revision = c.Labels[hruntime.LabelSource], c.Labels[hruntime.LabelRevision]
				pp.Changes = append(pp.Changes, Change{Container: c.Slot(), Action: ActionRemove, Reasons: []string{"no longer desired"}, Current: &c})
			}
			plan.Pods = append(plan.Pods, pp)
		}
	}
	sort.SliceStable(plan.Pods, func(a, b int) bool { return plan.Pods[a].ID < plan.Pods[b].ID })
	return plan
}

// sortContainers orders app containers by slot name, infra last.
func sortContainers(cs []hruntime.Container) {
	sort.SliceStable(cs, func(a, b int) bool {
		ia, ib := cs[a].Slot() == hruntime.InfraName, cs[b].Slot() == hruntime.InfraName
		if ia != ib {
			return ib
		}
		if cs[a].Slot() != cs[b].Slot() {
			return cs[a].Slot() < cs[b].Slot()
		}
		return cs[a].Created.After(cs[b].Created)
	})
}

func planPod(p *Pod, current []hruntime.Container, recoverNet bool, env *EnvHasher) PodPlan {
	m := p.Manifest
	pp := PodPlan{ID: m.ID, Source: p.Source, Revision: p.Revision, Desired: p, Current: current}
	slots := map[string]*hruntime.Container{}
	var extras []hruntime.Container
	sortContainers(current)
	for i := range current {
		c := current[i]
		if _, dup := slots[c.Slot()]; dup {
			// Two containers in one slot (a crash mid-recreate): keep the newest.
			extras = append(extras, c)
			continue
		}
		slots[c.Slot()] = &c
	}

	// The infra container decides whether app containers must be recreated.
	infraChange := Change{Container: hruntime.InfraName}
	infra := slots[hruntime.InfraName]
	delete(slots, hruntime.InfraName)
	appsReason := ""
	switch {
	case p.needsInfra() && infra == nil:
		infraChange.Action = ActionCreate
		infraChange.Reasons = []string{"pod network"}
		if len(slots) > 0 {
			appsReason = "pod network: infra container created"
		}
	case p.needsInfra() && infra.Hash() != manifest.InfraHash(m):
		infraChange.Action, infraChange.Current = ActionRecreate, infra
		infraChange.Reasons = []string{"published ports or pod labels changed"}
		appsReason = "pod network: infra container recreated"
	case p.needsInfra() && infra.State == hruntime.StateRestarting:
		// The engine restarts the infra container by its restart policy.
		// App containers cannot join its network namespace before it runs:
		// its start event brings the sync that moves them over.
		infraChange.Current = infra
		pp.infraWait = true
	case p.needsInfra() && !infra.Running():
		infraChange.Action, infraChange.Current = ActionRestart, infra
		infraChange.Reasons = []string{fmt.Sprintf("infra container %s", stateText(*infra))}
		recoverNet = true
	case p.needsInfra():
		infraChange.Current = infra
	case infra != nil:
		infraChange.Action, infraChange.Current = ActionRemove, infra
		infraChange.Reasons = []string{"pod has a single container now"}
		appsReason = "pod network: infra container removed"
	}

	for i, c := range m.Containers {
		ch := Change{Container: c.Name}
		cur := slots[c.Name]
		delete(slots, c.Name)
		want := manifest.ContainerHash(m, i)
		switch {
		case cur == nil:
			ch.Action = ActionCreate
			ch.Reasons = []string{"new container"}
			if len(current) == 0 {
				ch.Reasons = []string{"new pod"}
			}
		case cur.Hash() != want:
			ch.Action, ch.Current = ActionRecreate, cur
			ch.Reasons = recreateReasons(*cur, m, i, env)
		case appsReason != "":
			ch.Action, ch.Current = ActionRecreate, cur
			ch.Reasons = []string{appsReason}
		case pp.infraWait:
			ch.Current = cur
		case recoverNet && cur.Running():
			ch.Action, ch.Current = ActionRestart, cur
			ch.Reasons = []string{"pod network: rejoin the infra container's network namespace"}
		case !cur.Running() && shouldRun(m.RestartPolicy, *cur):
			ch.Action, ch.Current = ActionRestart, cur
			ch.Reasons = []string{fmt.Sprintf("%s, restartPolicy %s", stateText(*cur), m.RestartPolicy)}
		default:
			ch.Current = cur
		}
		pp.Changes = append(pp.Changes, ch)
	}
	if infraChange.Action != ActionNone || infra != nil || p.needsInfra() {
		pp.Changes = append(pp.Changes, infraChange)
	}
	// Slots no longer in the manifest, and duplicates.
	var gone []string
	for name := range slots {
		gone = append(gone, name)
	}
	sort.Strings(gone)
	for _, name := range gone {
		pp.Changes = append(pp.Changes, Change{Container: name, Action: ActionRemove, Reasons: []string{"container removed from the manifest"}, Current: slots[name]})
	}
	for i := range extras {
		c := extras[i]
		pp.Changes = append(pp.Changes, Change{Container: c.Slot(), Action: ActionRemove, Reasons: []string{"duplicate container for this slot"}, Current: &c})
	}
	return pp
}

// shouldRun reports whether a stopped container must be started again. The
// engine restarts crashed containers itself (restart policies); this covers
// containers stopped by hand, or created but never started.
func shouldRun(policy string, c hruntime.Container) bool {
	switch {
	case c.State == hruntime.StateCreated:
		return true
	case c.State == hruntime.StateRestarting, c.State == hruntime.StateRemoving:
		return false
	case policy == manifest.RestartAlways:
		return true
	case policy == manifest.RestartOnFailure:
		return c.ExitCode != 0
	default:
		return false
	}
}

func stateText(c hruntime.Container) string {
	if c.State == hruntime.StateExited {
		return fmt.Sprintf("exited (%d)", c.ExitCode)
	}
	return c.State
}

// recreateReasons compares the container's recorded spec with the desired
// one, field by field.
func recreateReasons(cur hruntime.Container, m manifest.Manifest, i int, env *EnvHasher) []string {
	want := summarize(m, i, env)
	old, ok := parseSummary(cur.Labels[LabelSpec])
	if !ok {
		// No recorded spec: only the image can be compared.
		old, want = specSummary{Image: cur.Image}, specSummary{Image: want.Image}
	}
	if r := changeReasons(old, want); len(r) > 0 {
		return r
	}
	r := fmt.Sprintf("spec changed (hash %s -> %s)", manifest.ShortHash(cur.Hash(), 12), manifest.ShortHash(manifest.ContainerHash(m, i), 12))
	if envUncompared(old, want) {
		r += ": env values recorded with another key (or by an older hostlet) cannot be compared"
	}
	return []string{r}
}
