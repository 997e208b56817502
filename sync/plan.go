package sync

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/podspec"
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
	// repair: the change moves a container into a network namespace that
	// is gone (its infra container, or the container it joined, died or
	// was lost): it disrupts nothing that still works, so no maintenance
	// window holds it back.
	repair bool
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
	// joinID is, for a pod with networkOf, the ID of the listed container
	// that holds that pod's network namespace ("" when it has none).
	joinID string
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
	// PolicyCleared names, by ID, stopped app containers that hostlet
	// stopped itself, their restart policy cleared, and did not start
	// again or remove (killed, refused: see policyMarks): wanted again,
	// they run again whatever their exit code and the pod's
	// restartPolicy.
	PolicyCleared map[string]bool
	// specs, when not nil, hold the spec hashes of the manifests last
	// planned (the Syncer's, across its syncs).
	specs *specMemos
}

// MakePlan compares desired pods with the containers one list call
// returned. It is pure: the same inputs give the same plan, in ID order.
func MakePlan(desired []Pod, actual []hruntime.Container, opts PlanOptions) Plan {
	byPod := map[string][]hruntime.Container{}
	for _, c := range podContainers(actual) {
		byPod[c.Pod()] = append(byPod[c.Pod()], c)
	}
	var plan Plan
	seen := map[string]bool{}
	for i := range desired {
		p := &desired[i]
		seen[p.Manifest.ID] = true
		var join *hruntime.Container
		if of := p.Manifest.NetworkOf; of != "" {
			join = networkHolder(byPod[of])
		}
		var spec *specMemo
		if opts.specs != nil {
			spec = opts.specs.of(p.Manifest)
		}
		pp := planPod(p, byPod[p.Manifest.ID], podInputs{recoverNet: opts.Recover[p.Manifest.ID], env: opts.EnvHasher,
			join: join, spec: spec, policyCleared: opts.PolicyCleared})
		plan.Pods = append(plan.Pods, pp)
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
	followHolders(&plan)
	return plan
}

// followHolders recreates, in the plan, the containers of pods with
// networkOf whose network's holder the plan of the other pod takes down:
// they go with it (Apply removes them first) and are created anew into
// the next one once that pod has changed (they wait for it).
func followHolders(plan *Plan) {
	var at map[string]int
	for i := range plan.Pods {
		pp := &plan.Pods[i]
		if pp.Desired == nil || pp.Desired.Manifest.NetworkOf == "" || pp.joinID == "" {
			continue
		}
		if at == nil {
			at = make(map[string]int, len(plan.Pods))
			for j, other := range plan.Pods {
				at[other.ID] = j
			}
		}
		of := pp.Desired.Manifest.NetworkOf
		q, ok := at[of]
		if !ok || !takesDown(plan.Pods[q], pp.joinID) {
			continue
		}
		for j := range pp.Changes {
			ch := &pp.Changes[j]
			if ch.Current == nil || replaces(ch.Action) || ch.Current.Labels[podspec.LabelNetworkOf] != pp.joinID {
				continue
			}
			ch.Action, ch.repair = ActionRecreate, true
			ch.Reasons = []string{fmt.Sprintf("network of pod %s: the container holding it is replaced", of)}
		}
	}
}

// takesDown reports whether pod plan pp stops and removes container id.
func takesDown(pp PodPlan, id string) bool {
	for _, ch := range pp.Changes {
		if ch.Current != nil && ch.Current.ID == id && replaces(ch.Action) {
			return true
		}
	}
	return false
}

// podContainers are the containers of actual that belong to a pod: one
// without a pod or slot label is never treated as a pod's (nothing plans,
// starts or removes it; hruntime.Docker lists none). actual is not
// modified; the common case allocates nothing.
func podContainers(actual []hruntime.Container) []hruntime.Container {
	if !slices.ContainsFunc(actual, notOfPod) {
		return actual
	}
	return slices.DeleteFunc(slices.Clone(actual), notOfPod)
}

func notOfPod(c hruntime.Container) bool { return c.Pod() == "" || c.Slot() == "" }

// sortContainers orders app containers by slot name, infra last, each
// slot's newest first. The engine lists creation times in whole seconds:
// of two created in the same second, a running one comes first (a
// recreate cut short leaves its successor running beside the old one,
// stopped).
func sortContainers(cs []hruntime.Container) {
	sort.SliceStable(cs, func(a, b int) bool {
		ia, ib := cs[a].Slot() == hruntime.InfraName, cs[b].Slot() == hruntime.InfraName
		if ia != ib {
			return ib
		}
		if cs[a].Slot() != cs[b].Slot() {
			return cs[a].Slot() < cs[b].Slot()
		}
		return slotsOver(cs[a], cs[b])
	})
}

// slotsOver reports whether a, not b, is their slot's container: the
// newer; of two created in the same second (the engine lists whole
// seconds), the running one.
func slotsOver(a, b hruntime.Container) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.After(b.Created)
	}
	return a.Running() && !b.Running()
}

// planPod plans one desired pod against its listed containers: the infra
// container first (its decision can replace or move every app container),
// then the app containers in manifest order, then the containers to remove.
func planPod(p *Pod, current []hruntime.Container, in podInputs) PodPlan {
	join, spec := in.join, in.spec
	m := p.Manifest
	pp := PodPlan{ID: m.ID, Source: p.Source, Revision: p.Revision, Desired: p, Current: current}
	current, inits := splitInits(current)
	slots, extras := bySlot(current)
	infra := slots[hruntime.InfraName]
	delete(slots, hruntime.InfraName)

	net := planInfra(p, infra, len(slots), spec)
	if join != nil {
		pp.joinID = join.ID
		// The other pod's container is restarting or stopped: what joins
		// it waits for it to run, as app containers wait for their infra.
		net.wait = net.wait || join.State != hruntime.StateRunning
	}
	pp.infraWait = net.wait
	apps := appPlanner{m: m, spec: spec, env: in.env, newPod: len(current) == 0, net: net, rejoin: in.recoverNet || net.rejoin, join: pp.joinID,
		holderIP: runningIP(infra, join), policyCleared: in.policyCleared}
	for i, c := range m.Containers {
		pp.Changes = append(pp.Changes, apps.plan(i, slots[c.Name]))
		delete(slots, c.Name)
	}
	if net.change.Action != ActionNone || infra != nil || p.NeedsInfra() {
		pp.Changes = append(pp.Changes, net.change)
	}
	pp.Changes = append(pp.Changes, removals(slots, extras)...)
	pp.Changes = append(pp.Changes, initRemovals(m, inits)...)
	return pp
}

// podInputs are what planPod takes besides the pod and its containers.
type podInputs struct {
	// recoverNet: the pod's network is recovered (PlanOptions.Recover).
	recoverNet bool
	env        *EnvHasher
	// join is the container holding the network a pod with networkOf
	// joins (networkHolder), nil when there is none.
	join *hruntime.Container
	// spec is the memo of the pod's manifest, nil when the caller keeps
	// none.
	spec          *specMemo
	policyCleared map[string]bool
}

// splitInits splits a pod's listed containers into its app and infra
// containers and its init containers' (podspec.IsInitSlot). The common
// case, a pod without init containers, allocates nothing.
func splitInits(current []hruntime.Container) (others, inits []hruntime.Container) {
	if !slices.ContainsFunc(current, isInit) {
		return current, nil
	}
	for _, c := range current {
		if isInit(c) {
			inits = append(inits, c)
		} else {
			others = append(others, c)
		}
	}
	return others, inits
}

func isInit(c hruntime.Container) bool { return podspec.IsInitSlot(c.Slot()) }

// initRemovals remove the init containers (of earlier runs) whose init
// container the manifest no longer has. The others are left to Apply,
// which runs them again when the app containers need it and removes
// those of earlier runs then (see runInits): an exited one stays until
// then, for its logs.
func initRemovals(m manifest.Manifest, inits []hruntime.Container) []Change {
	var out []Change
	for i := range inits {
		c := inits[i]
		if slices.ContainsFunc(m.InitContainers, func(ic manifest.Container) bool { return podspec.InitSlot(ic.Name) == c.Slot() }) {
			continue
		}
		out = append(out, Change{Container: c.Slot(), Action: ActionRemove, Reasons: []string{"init container removed from the manifest"}, Current: &c})
	}
	return out
}

// bySlot sorts current (see sortContainers) and maps each slot to its
// newest container; extras are the older ones, left in one slot by a
// crash in the middle of a recreate.
func bySlot(current []hruntime.Container) (slots map[string]*hruntime.Container, extras []hruntime.Container) {
	slots = map[string]*hruntime.Container{}
	sortContainers(current)
	for i := range current {
		c := current[i]
		if _, dup := slots[c.Slot()]; dup {
			extras = append(extras, c)
			continue
		}
		slots[c.Slot()] = &c
	}
	return slots, extras
}

// infraDecision is the plan of a pod's infra container and what it means
// for the pod's app containers.
type infraDecision struct {
	change Change
	// appsReason, when set, recreates every app container: their network
	// namespace is created, replaced or removed.
	appsReason string
	// wait: the engine is restarting the infra container; app containers
	// are left as they are until it runs.
	wait bool
	// rejoin: the infra container is restarted; running app containers
	// restart to join its new network namespace.
	rejoin bool
	// lost: the infra container is gone; the app containers are recreated
	// into a new one (a repair, see Change.repair).
	lost bool
}

// planInfra decides on the pod's infra container infra (nil when there is
// none); apps is how many app containers exist, spec the memo of the pod's
// manifest (nil: none kept).
func planInfra(p *Pod, infra *hruntime.Container, apps int, spec *specMemo) infraDecision {
	hasApps := apps > 0
	d := infraDecision{change: Change{Container: hruntime.InfraName}}
	switch {
	case p.NeedsInfra() && infra == nil:
		d.change.Action = ActionCreate
		d.change.Reasons = []string{"pod network"}
		if hasApps {
			d.appsReason = "pod network: infra container created"
			// Several app containers, or one after init containers,
			// shared the infra container that is gone; one alone ran on
			// its own network (a container added to it now is a change,
			// not a repair).
			d.lost = apps > 1 || len(p.Manifest.InitContainers) > 0
		}
	case p.NeedsInfra() && infra.Hash() != spec.infraHash(p.Manifest):
		d.change.Action, d.change.Current = ActionRecreate, infra
		d.change.Reasons = []string{"published ports, networks or pod labels changed"}
		d.appsReason = "pod network: infra container recreated"
	case p.NeedsInfra() && infra.State == hruntime.StateRestarting:
		// The engine restarts the infra container by its restart policy.
		// App containers cannot join its network namespace before it runs:
		// its start event brings the sync that moves them over.
		d.change.Current = infra
		d.wait = true
	case p.NeedsInfra() && !infra.Running():
		d.change.Action, d.change.Current = ActionRestart, infra
		d.change.Reasons = []string{fmt.Sprintf("infra container %s", stateText(*infra))}
		d.change.repair = true
		d.rejoin = true
	case p.NeedsInfra():
		d.change.Current = infra
	case infra != nil:
		d.change.Action, d.change.Current = ActionRemove, infra
		d.change.Reasons = []string{"pod has a single container now"}
		d.appsReason = "pod network: infra container removed"
	}
	return d
}

// appPlanner plans the app containers of one pod.
type appPlanner struct {
	m manifest.Manifest
	// spec is m's memo (nil: none kept).
	spec *specMemo
	env  *EnvHasher
	// newPod: the pod has no container at all yet.
	newPod bool
	net    infraDecision
	// rejoin: running app containers restart into the infra container's
	// network namespace (it restarts, or the pod's network is recovered).
	rejoin bool
	// join is the container whose network namespace a pod with
	// networkOf joins (PodPlan.joinID).
	join string
	// holderIP is the address of the running container holding the
	// pod's network namespace, its infra container or the one it joins
	// ("" when it has neither, or it does not run).
	holderIP string
	// policyCleared is PlanOptions.PolicyCleared.
	policyCleared map[string]bool
}

// runningIP is the listed address of the first of cs that runs.
func runningIP(cs ...*hruntime.Container) string {
	for _, c := range cs {
		if c != nil && c.Running() && c.IP != "" {
			return c.IP
		}
	}
	return ""
}

// plan decides on app container i, whose slot holds cur (nil when empty).
func (a appPlanner) plan(i int, cur *hruntime.Container) Change {
	ch := Change{Container: a.m.Containers[i].Name, Current: cur}
	switch {
	case cur == nil:
		ch.Action = ActionCreate
		ch.Reasons = []string{"new container"}
		if a.newPod {
			ch.Reasons = []string{"new pod"}
		}
	case cur.Hash() != a.spec.containerHash(a.m, i):
		ch.Action = ActionRecreate
		ch.Reasons = podspec.RecreateReasons(*cur, a.m, i, a.env)
	case a.net.appsReason != "":
		ch.Action = ActionRecreate
		ch.Reasons = []string{a.net.appsReason}
		ch.repair = a.net.lost
	case a.m.NetworkOf != "" && cur.Labels[podspec.LabelNetworkOf] != a.join:
		ch.Action = ActionRecreate
		ch.Reasons = []string{fmt.Sprintf("network of pod %s: the container holding it was replaced", a.m.NetworkOf)}
		ch.repair = true
	case nameChange(*cur, a.m.Containers[i].ContainerName) != "":
		ch.Action = ActionRecreate
		ch.Reasons = []string{nameChange(*cur, a.m.Containers[i].ContainerName)}
	case a.net.wait:
	case a.holderIP != "" && manifest.ReadsField(a.m.Containers[i], manifest.FieldPodIP) &&
		cur.Labels[hruntime.LabelPodIP] != "" && cur.Labels[hruntime.LabelPodIP] != a.holderIP:
		// Its env holds an address the pod no longer has (the engine
		// restarted the pod's namespace: a reboot).
		ch.Action, ch.repair = ActionRecreate, true
		ch.Reasons = []string{"pod network: the pod's address changed, and the container reads it"}
	case a.rejoin && cur.Running() && manifest.ReadsField(a.m.Containers[i], manifest.FieldPodIP):
		// Its env holds the address of the namespace it left: a new one.
		ch.Action, ch.repair = ActionRecreate, true
		ch.Reasons = []string{"pod network: rejoin its network namespace, whose address the container reads"}
	case a.rejoin && cur.Running() && a.m.NetworkOf != "":
		ch.Action, ch.repair = ActionRestart, true
		ch.Reasons = []string{fmt.Sprintf("network of pod %s: rejoin its network namespace", a.m.NetworkOf)}
	case a.rejoin && cur.Running():
		ch.Action, ch.repair = ActionRestart, true
		ch.Reasons = []string{"pod network: rejoin the infra container's network namespace"}
	case !cur.Running() && shouldRun(a.m.RestartPolicy, *cur):
		ch.Action = ActionRestart
		ch.Reasons = []string{fmt.Sprintf("%s, restartPolicy %s", stateText(*cur), a.m.RestartPolicy)}
	case (cur.State == hruntime.StateExited || cur.State == hruntime.StateCreated) && a.policyCleared[cur.ID]:
		ch.Action = ActionRestart
		ch.Reasons = []string{fmt.Sprintf("%s, stopped by hostlet and not started again", stateText(*cur))}
	}
	return ch
}

// networkHolder is the container holding the network namespace of a pod
// whose listed containers are cs: its infra container, else its one app
// container (the newest, after a cut recreate); nil when there is none,
// or several app containers without an infra one.
func networkHolder(cs []hruntime.Container) *hruntime.Container {
	var holder *hruntime.Container
	for i := range cs {
		if cs[i].Slot() == hruntime.InfraName && (holder == nil || slotsOver(cs[i], *holder)) {
			holder = &cs[i]
		}
	}
	if holder != nil {
		return holder
	}
	for i := range cs {
		c := &cs[i]
		switch {
		case holder == nil || holder.Slot() == c.Slot() && slotsOver(*c, *holder):
			holder = c
		case holder.Slot() != c.Slot():
			return nil
		}
	}
	return holder
}

// joinedHolders maps each pod of of (pod → the pod whose network it
// joins) to the container of cs holding that network (networkHolder),
// where there is one.
func joinedHolders(cs []hruntime.Container, of map[string]string) map[string]*hruntime.Container {
	if len(of) == 0 {
		return nil
	}
	byPod := map[string][]hruntime.Container{}
	for _, c := range cs {
		byPod[c.Pod()] = append(byPod[c.Pod()], c)
	}
	out := make(map[string]*hruntime.Container, len(of))
	for pod, target := range of {
		if h := networkHolder(byPod[target]); h != nil {
			out[pod] = h
		}
	}
	return out
}

// nameChange says why container cur does not have the name want (a
// manifest's container name; "" for the name hostlet gives), or "" when
// it has.
func nameChange(cur hruntime.Container, want string) string {
	had := cur.Labels[hruntime.LabelName]
	switch {
	case had != want && want == "":
		return fmt.Sprintf("container name %q given up", had)
	case had != want && had == "":
		return fmt.Sprintf("container name %q chosen", want)
	case had != want:
		return fmt.Sprintf("container name %q, was %q", want, had)
	case want != "" && cur.Name != want:
		return fmt.Sprintf("under its temporary name %s (a recreate was cut short): named %q now", cur.Name, want)
	}
	return ""
}

// removals are the changes that remove the slots no longer in the
// manifest (in name order) and the extra containers of a slot.
func removals(gone map[string]*hruntime.Container, extras []hruntime.Container) []Change {
	if len(gone) == 0 && len(extras) == 0 {
		return nil // the common case: nothing to sort or allocate
	}
	var out []Change
	for _, name := range slices.Sorted(maps.Keys(gone)) {
		out = append(out, Change{Container: name, Action: ActionRemove, Reasons: []string{"container removed from the manifest"}, Current: gone[name]})
	}
	for i := range extras {
		c := extras[i]
		out = append(out, Change{Container: c.Slot(), Action: ActionRemove, Reasons: []string{"duplicate container for this slot"}, Current: &c})
	}
	return out
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
