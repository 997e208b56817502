package sync_test

// Table tests of the planner and of the order in which Apply carries a plan
// out, on the in-memory engine (synctest.Fake): no Docker engine. Every row
// names the branch of the plan decision it takes.

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/sync/synctest"
)

const (
	tableInstance = "table"
	tableInfra    = "example.org/pause:1"
)

// onePod is a pod of one container: it holds its own network namespace.
func onePod(id string) manifest.Manifest {
	return manifest.Manifest{Version: "v1beta1", ID: id, Containers: []manifest.Container{
		{Name: "app", Image: "example.org/app:1"},
	}}
}

// twoPod is a pod of two containers sharing the network namespace of an
// infra container, which publishes app's port.
func twoPod(id string) manifest.Manifest {
	return manifest.Manifest{Version: "v1beta1", ID: id, Containers: []manifest.Container{
		{Name: "app", Image: "example.org/app:1", Ports: []manifest.Port{{ContainerPort: 80, HostPort: 8080}}},
		{Name: "side", Image: "example.org/side:1"},
	}}
}

// readsPodIP is m whose first container reads the pod's address.
func readsPodIP(m manifest.Manifest) manifest.Manifest {
	m.Containers = slices.Clone(m.Containers)
	m.Containers[0].Env = []manifest.EnvVar{{Name: "POD_IP", Value: manifest.FieldToken(manifest.FieldPodIP)}}
	return m
}

// edit returns m changed by fn.
func edit(m manifest.Manifest, fn func(m *manifest.Manifest)) manifest.Manifest {
	fn(&m)
	return m
}

// withAddress puts m's pod on a network at a fixed address.
func withAddress(m manifest.Manifest) manifest.Manifest {
	m.Networks = []manifest.Network{{Name: "fixed", Subnet: "10.89.7.0/24", IPv4Address: "10.89.7.5"}}
	return m
}

// pullAlways sets the imagePullPolicy of m's containers to Always.
func pullAlways(m *manifest.Manifest) {
	for i := range m.Containers {
		m.Containers[i].ImagePullPolicy = manifest.PullAlways
	}
}

// onNetwork is pod id of one container on network shop_default under
// alias (internal: the network is).
func onNetwork(id, alias string, internal bool) manifest.Manifest {
	m := onePod(id)
	m.Networks = []manifest.Network{{Name: "shop_default", Aliases: []string{alias}, Internal: internal}}
	return m
}

// pods makes desired pods of source "test" at revision rev1.
func pods(ms ...manifest.Manifest) []hsync.Pod {
	var out []hsync.Pod
	for _, m := range ms {
		out = append(out, hsync.NewPod(m, "test", "rev1"))
	}
	return out
}

// converge applies pods to a new Fake from scratch, env values hashed with
// env, and returns the engine.
func converge(t *testing.T, env *hsync.EnvHasher, desired []hsync.Pod) *synctest.Fake {
	t.Helper()
	fake := synctest.NewFake()
	plan := hsync.MakePlan(desired, nil, hsync.PlanOptions{EnvHasher: env})
	for _, r := range hsync.Apply(t.Context(), fake, plan, tableApplyOptions(env), slog.New(slog.DiscardHandler)) {
		if r.Err != nil {
			t.Fatalf("converge pod %s: %v", r.ID, r.Err)
		}
	}
	fake.Reset()
	return fake
}

func tableApplyOptions(env *hsync.EnvHasher) hsync.ApplyOptions {
	return hsync.ApplyOptions{Instance: tableInstance, InfraImage: tableInfra, Concurrency: 1, EnvHasher: env}
}

// listed is what a list call of fake reports.
func listed(t *testing.T, fake *synctest.Fake) []hruntime.Container {
	t.Helper()
	cs, err := fake.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// mutation is what happened to the listed containers since they were
// applied: a crash, a stop by hand, a container lost or left twice.
type mutation func(t *testing.T, cs []hruntime.Container) []hruntime.Container

// slotIndex finds "pod/slot" in cs.
func slotIndex(t *testing.T, cs []hruntime.Container, slot string) int {
	t.Helper()
	for i, c := range cs {
		if c.Pod()+"/"+c.Slot() == slot {
			return i
		}
	}
	t.Fatalf("no container %s in %d listed", slot, len(cs))
	return -1
}

// inState puts slot in state, with an exit code.
func inState(slot, state string, code int) mutation {
	return func(t *testing.T, cs []hruntime.Container) []hruntime.Container {
		i := slotIndex(t, cs, slot)
		cs[i].State, cs[i].ExitCode = state, code
		return cs
	}
}

// lost removes slot from the list, as if its container had been removed by
// hand.
func lost(slot string) mutation {
	return func(t *testing.T, cs []hruntime.Container) []hruntime.Container {
		return slices.Delete(cs, slotIndex(t, cs, slot), slotIndex(t, cs, slot)+1)
	}
}

// unlabelled drops label from slot's container (made by an older hostlet).
func unlabelled(slot, label string) mutation {
	return func(t *testing.T, cs []hruntime.Container) []hruntime.Container {
		i := slotIndex(t, cs, slot)
		l := map[string]string{}
		for k, v := range cs[i].Labels {
			if k != label {
				l[k] = v
			}
		}
		cs[i].Labels = l
		return cs
	}
}

// readdressed gives slot's container another address (the engine
// restarted it: a reboot).
func readdressed(slot, ip string) mutation {
	return func(t *testing.T, cs []hruntime.Container) []hruntime.Container {
		cs[slotIndex(t, cs, slot)].IP = ip
		return cs
	}
}

// duplicated adds an older container in slot, ID "stale" (left by a crash
// in the middle of a recreate).
func duplicated(slot string) mutation {
	return func(t *testing.T, cs []hruntime.Container) []hruntime.Container {
		c := cs[slotIndex(t, cs, slot)]
		c.ID, c.Name, c.Created = "stale", c.Name+"-stale", c.Created.Add(-time.Hour)
		return append(cs, c)
	}
}

// renderPlan is one line per change, in plan order: "pod/slot action:
// reasons" ("keep" for no action).
func renderPlan(plan hsync.Plan) []string {
	var out []string
	for _, pp := range plan.Pods {
		for _, ch := range pp.Changes {
			action := string(ch.Action)
			if ch.Action == hsync.ActionNone {
				action = "keep"
			}
			line := pp.ID + "/" + ch.Container + " " + action
			if len(ch.Reasons) > 0 {
				line += ": " + strings.Join(ch.Reasons, "; ")
			}
			out = append(out, line)
		}
	}
	return out
}

// countLines counts the app containers of rendered plan lines by action,
// as Plan.Counts does.
func countLines(lines []string) hsync.Counts {
	var c hsync.Counts
	for _, l := range lines {
		slot, rest, _ := strings.Cut(l, " ")
		if strings.HasSuffix(slot, "/"+hruntime.InfraName) {
			continue
		}
		action, _, _ := strings.Cut(rest, ":")
		switch hsync.Action(action) {
		case hsync.ActionCreate:
			c.Create++
		case hsync.ActionRecreate:
			c.Recreate++
		case hsync.ActionRestart:
			c.Restart++
		case hsync.ActionRemove:
			c.Remove++
		default:
			c.Unchanged++
		}
	}
	return c
}

// changes reports whether a rendered line changes its container.
func changes(line string) bool {
	_, rest, _ := strings.Cut(line, " ")
	return rest != "keep"
}

// matches reports whether s matches pattern, in which "…" stands for any
// text.
func matches(pattern, s string) bool {
	parts := strings.Split(pattern, "…")
	if len(parts) == 1 {
		return s == pattern
	}
	last := parts[len(parts)-1]
	if !strings.HasPrefix(s, parts[0]) || !strings.HasSuffix(s, last) || len(s) < len(parts[0])+len(last) {
		return false
	}
	s = s[len(parts[0]) : len(s)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

func TestPlanTable(t *testing.T) {
	keyA, keyB := hsync.NewEnvHasher([]byte("key a")), hsync.NewEnvHasher([]byte("key b"))
	withEnv := func(m manifest.Manifest, env ...manifest.EnvVar) manifest.Manifest {
		return edit(m, func(m *manifest.Manifest) { m.Containers[0].Env = env })
	}
	policy := func(m manifest.Manifest, p string) manifest.Manifest {
		return edit(m, func(m *manifest.Manifest) { m.RestartPolicy = p })
	}
	three := func(id string) manifest.Manifest {
		return edit(twoPod(id), func(m *manifest.Manifest) {
			m.Containers = append(m.Containers, manifest.Container{Name: "extra", Image: "example.org/extra:1"})
		})
	}
	// grown is onePod with a second container: app's spec is unchanged.
	grown := edit(onePod("p"), func(m *manifest.Manifest) {
		m.Containers = append(m.Containers, manifest.Container{Name: "side", Image: "example.org/side:1"})
	})
	// shrunk is twoPod without side: app's spec is unchanged.
	shrunk := edit(twoPod("p"), func(m *manifest.Manifest) { m.Containers = m.Containers[:1] })

	tests := []struct {
		name string
		// before is applied to the engine first (with beforeEnv), then
		// mutated; after is desired now (planned with afterEnv).
		before    []hsync.Pod
		beforeEnv *hsync.EnvHasher
		mutate    []mutation
		after     []hsync.Pod
		afterEnv  *hsync.EnvHasher
		prune     bool
		recover   []string
		// want is one line per change (see renderPlan); "…" matches any
		// text.
		want  []string
		check func(t *testing.T, plan hsync.Plan)
	}{
		// Create.
		{name: "create/new pod of one container, no infra container", after: pods(onePod("p")),
			want: []string{"p/app create: new pod"}},
		{name: "create/new pod of two containers with its infra container", after: pods(twoPod("p")),
			want: []string{"p/app create: new pod", "p/side create: new pod", "p/POD create: pod network"}},
		{name: "create/container added to a running pod", before: pods(twoPod("p")), after: pods(three("p")),
			want: []string{"p/app keep", "p/side keep", "p/extra create: new container", "p/POD keep"}},

		// Keep.
		{name: "keep/converged pod of one container", before: pods(onePod("p")), after: pods(onePod("p")),
			want: []string{"p/app keep"}},
		{name: "keep/converged pod with a running infra container", before: pods(twoPod("p")), after: pods(twoPod("p")),
			want: []string{"p/app keep", "p/side keep", "p/POD keep"}},
		{name: "keep/stand-in or new revision of the same spec: revision is no part of the hash", before: pods(twoPod("p")),
			after: []hsync.Pod{hsync.NewPod(twoPod("p"), "other", "rev0")},
			want:  []string{"p/app keep", "p/side keep", "p/POD keep"}},
		{name: "keep/probe, pull policy and grace period are no part of the spec", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) {
				m.TerminationGracePeriodSeconds = 99
				m.Containers[0].ImagePullPolicy = manifest.PullAlways
				m.Containers[0].LivenessProbe = &manifest.Probe{Type: manifest.ProbeTCP, TCPSocket: &manifest.TCPSocket{Port: "80"}}
			})),
			want: []string{"p/app keep"}},

		// The infra container decides first.
		{name: "infra create/pod grows to two containers: the running one moves into the new network",
			before: pods(onePod("p")), after: pods(grown),
			want: []string{"p/app recreate: pod network: infra container created", "p/side create: new container", "p/POD create: pod network"}},
		{name: "infra create/infra container lost: app containers recreated into the new network",
			before: pods(twoPod("p")), mutate: []mutation{lost("p/POD")}, after: pods(twoPod("p")),
			want: []string{"p/app recreate: pod network: infra container created", "p/side recreate: pod network: infra container created", "p/POD create: pod network"}},
		{name: "infra recreate/published port changed", before: pods(twoPod("p")),
			after: pods(edit(twoPod("p"), func(m *manifest.Manifest) { m.Containers[0].Ports[0].HostPort = 8081 })),
			want: []string{"p/app recreate: ports [8080->80/TCP] -> [8081->80/TCP]", "p/side recreate: pod network: infra container recreated",
				"p/POD recreate: published ports, networks or pod labels changed"}},
		{name: "infra recreate/pod label changed", before: pods(twoPod("p")),
			after: pods(edit(twoPod("p"), func(m *manifest.Manifest) { m.Labels = map[string]string{"team": "a"} })),
			want:  []string{"p/app recreate: label team changed", "p/side recreate: label team changed", "p/POD recreate: published ports, networks or pod labels changed"}},
		{name: "infra wait/the engine restarts the infra container: app containers wait, a stopped one too",
			before: pods(twoPod("p")), mutate: []mutation{inState("p/POD", hruntime.StateRestarting, 0), inState("p/side", hruntime.StateExited, 1)},
			after: pods(twoPod("p")),
			want:  []string{"p/app keep", "p/side keep", "p/POD keep"}},
		{name: "infra restart/stopped infra container started, running app containers rejoin its network",
			before: pods(twoPod("p")), mutate: []mutation{inState("p/POD", hruntime.StateExited, 137)}, after: pods(twoPod("p")),
			want: []string{"p/app restart: pod network: rejoin the infra container's network namespace",
				"p/side restart: pod network: rejoin the infra container's network namespace", "p/POD restart: infra container exited (137)"}},
		{name: "infra restart/an app container reading the pod's address is recreated, not restarted",
			before: pods(readsPodIP(twoPod("p"))), mutate: []mutation{inState("p/POD", hruntime.StateExited, 137)}, after: pods(readsPodIP(twoPod("p"))),
			want: []string{"p/app recreate: pod network: rejoin its network namespace, whose address the container reads",
				"p/side restart: pod network: rejoin the infra container's network namespace", "p/POD restart: infra container exited (137)"}},
		{name: "infra readdressed/a container reading the pod's address is recreated when the address changed",
			before: pods(readsPodIP(twoPod("p"))), mutate: []mutation{readdressed("p/POD", "10.250.0.9")}, after: pods(readsPodIP(twoPod("p"))),
			want: []string{"p/app recreate: pod network: the pod's address changed, and the container reads it", "p/side keep", "p/POD keep"}},
		{name: "infra readdressed/a stopped reader is recreated, not restarted with the old address",
			before: pods(readsPodIP(twoPod("p"))), mutate: []mutation{readdressed("p/POD", "10.250.0.9"), inState("p/app", hruntime.StateExited, 1)},
			after: pods(readsPodIP(twoPod("p"))),
			want:  []string{"p/app recreate: pod network: the pod's address changed, and the container reads it", "p/side keep", "p/POD keep"}},
		{name: "infra readdressed/a reader whose address is the pod's is kept",
			before: pods(readsPodIP(twoPod("p"))), after: pods(readsPodIP(twoPod("p"))),
			want: []string{"p/app keep", "p/side keep", "p/POD keep"}},
		{name: "infra restart/a stopped app container is started, not rejoined",
			before: pods(twoPod("p")), mutate: []mutation{inState("p/POD", hruntime.StateExited, 137), inState("p/side", hruntime.StateExited, 0)},
			after: pods(twoPod("p")),
			want: []string{"p/app restart: pod network: rejoin the infra container's network namespace",
				"p/side restart: exited (0), restartPolicy Always", "p/POD restart: infra container exited (137)"}},
		{name: "infra recover/the infra container restarted after its app containers: they rejoin its network",
			before: pods(twoPod("p")), after: pods(twoPod("p")), recover: []string{"p"},
			want: []string{"p/app restart: pod network: rejoin the infra container's network namespace",
				"p/side restart: pod network: rejoin the infra container's network namespace", "p/POD keep"}},
		{name: "infra remove/pod shrinks to one container", before: pods(twoPod("p")), after: pods(shrunk),
			want: []string{"p/app recreate: pod network: infra container removed", "p/POD remove: pod has a single container now",
				"p/side remove: container removed from the manifest"}},

		// Recreate, one row per spec-change reason.
		{name: "recreate/image", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })),
			want:  []string{"p/app recreate: image example.org/app:1 -> 2"}},
		{name: "recreate/image of another repository", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/other:1" })),
			want:  []string{"p/app recreate: image example.org/app:1 -> example.org/other:1"}},
		{name: "recreate/command", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Command = []string{"serve"} })),
			want:  []string{"p/app recreate: command changed"}},
		{name: "recreate/args", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Args = []string{"-v"} })),
			want:  []string{"p/app recreate: args changed"}},
		{name: "recreate/networks", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) {
				m.Networks = []manifest.Network{{Name: "shop_default", Aliases: []string{"web"}}}
			})),
			want: []string{"p/app recreate: networks [] -> [shop_default(web)]"}},
		{name: "recreate/namespace settings", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Hostname = "web1" })),
			want:  []string{"p/app recreate: namespace [] -> [hostname=web1 hosts=[] dns=[] search=[]]"}},
		{name: "recreate/process settings", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].User, m.Containers[0].Init = "1000:1000", true })),
			want:  []string{"p/app recreate: settings [] -> [user=1000:1000 init]"}},
		{name: "recreate/workingDir", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].WorkingDir = "/srv" })),
			want:  []string{`p/app recreate: workingDir "" -> "/srv"`}},
		{name: "recreate/env added", before: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"})), beforeEnv: keyA,
			after: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"}, manifest.EnvVar{Name: "B", Value: "2"})), afterEnv: keyA,
			want: []string{"p/app recreate: env B added"}},
		{name: "recreate/env removed", before: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"}, manifest.EnvVar{Name: "B", Value: "2"})), beforeEnv: keyA,
			after: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"})), afterEnv: keyA,
			want: []string{"p/app recreate: env B removed"}},
		{name: "recreate/env value changed, hashed with the same key", before: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"})), beforeEnv: keyA,
			after: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "2"})), afterEnv: keyA,
			want: []string{"p/app recreate: env A changed"}},
		{name: "recreate/env value changed, recorded with another key: not compared", before: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"})), beforeEnv: keyA,
			after: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "2"})), afterEnv: keyB,
			want: []string{"p/app recreate: spec changed (hash … -> …): env values recorded with another key (or by an older hostlet) cannot be compared"}},
		{name: "recreate/env value changed, no hasher: values hidden, only the hash says", before: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "1"})),
			after: pods(withEnv(onePod("p"), manifest.EnvVar{Name: "A", Value: "2"})),
			want:  []string{"p/app recreate: spec changed (hash … -> …)"}},
		{name: "recreate/ports of a pod of one container (no infra container)", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) {
				m.Containers[0].Ports = []manifest.Port{{ContainerPort: 80, HostPort: 8080}}
			})),
			want: []string{"p/app recreate: ports [] -> [8080->80/TCP]"}},
		{name: "recreate/mounts", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) {
				m.Volumes = []manifest.Volume{{Name: "data"}}
				m.Containers[0].VolumeMounts = []manifest.VolumeMount{{Name: "data", MountPath: "/data"}}
			})),
			want: []string{"p/app recreate: mounts [] -> [volume:data:/data:rw]"}},
		{name: "recreate/memory", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Memory = 64 << 20 })),
			want:  []string{"p/app recreate: memory 0 -> 67108864"}},
		{name: "recreate/cpu", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].CPU = 512 })),
			want:  []string{"p/app recreate: cpu 0 -> 512"}},
		{name: "recreate/restartPolicy", before: pods(onePod("p")), after: pods(policy(onePod("p"), manifest.RestartOnFailure)),
			want: []string{"p/app recreate: restartPolicy Always -> OnFailure"}},
		{name: "recreate/pod label of a pod of one container", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Labels = map[string]string{"team": "a"} })),
			want:  []string{"p/app recreate: label team changed"}},
		{name: "recreate/several fields at once", before: pods(onePod("p")),
			after: pods(edit(onePod("p"), func(m *manifest.Manifest) {
				m.Containers[0].Image, m.Containers[0].Command = "example.org/app:2", []string{"serve"}
			})),
			want: []string{"p/app recreate: image example.org/app:1 -> 2; command changed"}},
		{name: "recreate/no recorded spec (older hostlet): the image compared", before: pods(onePod("p")),
			mutate: []mutation{unlabelled("p/app", hsync.LabelSpec)},
			after:  pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })),
			want:   []string{"p/app recreate: image example.org/app:1 -> 2"}},
		{name: "recreate/no recorded spec (older hostlet), another field: only the hash says", before: pods(onePod("p")),
			mutate: []mutation{unlabelled("p/app", hsync.LabelSpec)},
			after:  pods(edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Command = []string{"serve"} })),
			want:   []string{"p/app recreate: spec changed (hash … -> …)"}},

		// Restart of a stopped container (shouldRun).
		{name: "restart/created, never started", before: pods(onePod("p")),
			mutate: []mutation{inState("p/app", hruntime.StateCreated, 0)}, after: pods(onePod("p")),
			want: []string{"p/app restart: created, restartPolicy Always"}},
		{name: "restart/created, never started, even under restartPolicy Never", before: pods(policy(onePod("p"), manifest.RestartNever)),
			mutate: []mutation{inState("p/app", hruntime.StateCreated, 0)}, after: pods(policy(onePod("p"), manifest.RestartNever)),
			want: []string{"p/app restart: created, restartPolicy Never"}},
		{name: "restart/stopped under restartPolicy Always", before: pods(onePod("p")),
			mutate: []mutation{inState("p/app", hruntime.StateExited, 0)}, after: pods(onePod("p")),
			want: []string{"p/app restart: exited (0), restartPolicy Always"}},
		{name: "restart/failed under restartPolicy OnFailure", before: pods(policy(onePod("p"), manifest.RestartOnFailure)),
			mutate: []mutation{inState("p/app", hruntime.StateExited, 1)}, after: pods(policy(onePod("p"), manifest.RestartOnFailure)),
			want: []string{"p/app restart: exited (1), restartPolicy OnFailure"}},
		{name: "restart/dead container under restartPolicy Always", before: pods(onePod("p")),
			mutate: []mutation{inState("p/app", hruntime.StateDead, 0)}, after: pods(onePod("p")),
			want: []string{"p/app restart: dead, restartPolicy Always"}},
		{name: "keep/succeeded under restartPolicy OnFailure", before: pods(policy(onePod("p"), manifest.RestartOnFailure)),
			mutate: []mutation{inState("p/app", hruntime.StateExited, 0)}, after: pods(policy(onePod("p"), manifest.RestartOnFailure)),
			want: []string{"p/app keep"}},
		{name: "keep/exited under restartPolicy Never", before: pods(policy(onePod("p"), manifest.RestartNever)),
			mutate: []mutation{inState("p/app", hruntime.StateExited, 1)}, after: pods(policy(onePod("p"), manifest.RestartNever)),
			want: []string{"p/app keep"}},
		{name: "keep/the engine restarts the container by its restart policy", before: pods(onePod("p")),
			mutate: []mutation{inState("p/app", hruntime.StateRestarting, 1)}, after: pods(onePod("p")),
			want: []string{"p/app keep"}},
		{name: "keep/the engine is removing the container", before: pods(onePod("p")),
			mutate: []mutation{inState("p/app", hruntime.StateRemoving, 0)}, after: pods(onePod("p")),
			want: []string{"p/app keep"}},

		// Removal.
		{name: "remove/container dropped from the manifest, after the infra container", before: pods(three("p")), after: pods(twoPod("p")),
			want: []string{"p/app keep", "p/side keep", "p/POD keep", "p/extra remove: container removed from the manifest"}},
		{name: "remove/duplicate container of a slot: the newest kept", before: pods(onePod("p")),
			mutate: []mutation{duplicated("p/app")}, after: pods(onePod("p")),
			want: []string{"p/app keep", "p/app remove: duplicate container for this slot"},
			check: func(t *testing.T, plan hsync.Plan) {
				chs := plan.Pods[0].Changes
				if chs[0].Current.ID == "stale" || chs[1].Current.ID != "stale" {
					t.Errorf("kept %s, removed %s: want the older (stale) one removed", chs[0].Current.ID, chs[1].Current.ID)
				}
			}},
		{name: "remove/pod no longer desired, pruned: app containers first, infra last", before: pods(twoPod("p")), prune: true,
			want: []string{"p/app remove: no longer desired", "p/side remove: no longer desired", "p/POD remove: no longer desired"},
			check: func(t *testing.T, plan hsync.Plan) {
				if pp := plan.Pods[0]; !pp.Remove() || pp.Source != "test" || pp.Revision != "rev1" {
					t.Errorf("pruned pod: remove %v, source %q revision %q; want a removal of test@rev1", pp.Remove(), pp.Source, pp.Revision)
				}
			}},
		{name: "keep/pod no longer desired before every source delivered (no prune): left alone", before: pods(twoPod("p")),
			want: nil},

		// Order.
		{name: "order/pods by ID, removals among them", before: pods(onePod("a"), onePod("c")), prune: true,
			after: pods(onePod("c"), onePod("b")),
			want:  []string{"a/app remove: no longer desired", "b/app create: new pod", "c/app keep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := listed(t, converge(t, tt.beforeEnv, tt.before))
			for _, m := range tt.mutate {
				cs = m(t, cs)
			}
			opts := hsync.PlanOptions{Prune: tt.prune, EnvHasher: tt.afterEnv, Recover: map[string]bool{}}
			for _, id := range tt.recover {
				opts.Recover[id] = true
			}
			plan := hsync.MakePlan(tt.after, cs, opts)
			got := renderPlan(plan)
			ok := len(got) == len(tt.want)
			for i := 0; ok && i < len(got); i++ {
				ok = matches(tt.want[i], got[i])
			}
			if !ok {
				t.Fatalf("plan:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
			if want := countLines(got); plan.Counts() != want || plan.Changed() != slices.ContainsFunc(got, changes) {
				t.Errorf("counts %+v, changed %v; want %+v as the lines say", plan.Counts(), plan.Changed(), want)
			}
			if tt.check != nil {
				tt.check(t, plan)
			}
			again := hsync.MakePlan(tt.after, cs, opts)
			if !slices.Equal(renderPlan(again), got) {
				t.Errorf("a second plan of the same inputs differs: %q", renderPlan(again))
			}
		})
	}
}

// startDuplicate makes and starts a second container in slot, from the
// same spec under another name (left by a crash in the middle of a
// recreate).
func startDuplicate(slot string) func(t *testing.T, fake *synctest.Fake) {
	return func(t *testing.T, fake *synctest.Fake) {
		cs := listed(t, fake)
		spec, ok := fake.Spec(cs[slotIndex(t, cs, slot)].ID)
		if !ok {
			t.Fatalf("no spec of %s", slot)
		}
		spec.Name += "-dup"
		id, err := fake.Create(t.Context(), spec)
		if err == nil {
			err = fake.Start(t.Context(), id)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// renderCalls names the containers in fake's calls by pod/slot, through
// the containers listed before and after (IDs) and the container names.
func renderCalls(calls []synctest.Call, known ...[]hruntime.Container) []string {
	slot := map[string]string{}
	for _, cs := range known {
		for _, c := range cs {
			slot[c.ID], slot[c.Name] = c.Pod()+"/"+c.Slot(), c.Pod()+"/"+c.Slot()
		}
	}
	var out []string
	for _, c := range calls {
		if c.Method == "List" || c.Method == "ListVolumes" {
			continue
		}
		if s, ok := slot[c.Arg]; ok {
			c.Arg = s
		} else if parts := strings.Split(c.Arg, "_"); len(parts) == 4 && parts[0] == "hostlet" {
			c.Arg = parts[1] + "/" + parts[2] // a container or volume made by this apply
		}
		out = append(out, c.String())
	}
	return out
}

func TestApplyOrderTable(t *testing.T) {
	newImage := edit(onePod("p"), func(m *manifest.Manifest) { m.Containers[0].Image = "example.org/app:2" })
	withVolume := edit(twoPod("p"), func(m *manifest.Manifest) {
		m.Volumes = []manifest.Volume{{Name: "data"}}
		m.Containers[1].VolumeMounts = []manifest.VolumeMount{{Name: "data", MountPath: "/data"}}
	})
	tests := []struct {
		name    string
		before  []hsync.Pod
		mutate  func(t *testing.T, fake *synctest.Fake)
		after   []hsync.Pod
		recover []string
		opts    func(o *hsync.ApplyOptions)
		// want are the engine calls, containers named pod/slot, List and
		// ListVolumes left out.
		want    []string
		pulling []string
		check   func(t *testing.T, fake *synctest.Fake)
	}{
		{name: "create/images first, then the infra container, then the app containers in manifest order",
			after: pods(twoPod("p")),
			want: []string{"EnsureImage(example.org/app:1)", "EnsureImage(example.org/side:1)", "EnsureImage(example.org/pause:1)",
				"Create(p/POD)", "Start(p/POD)", "Create(p/app)", "Start(p/app)", "Create(p/side)", "Start(p/side)"},
			check: func(t *testing.T, fake *synctest.Fake) {
				cs := listed(t, fake)
				infra := cs[slotIndex(t, cs, "p/POD")].ID
				for _, slot := range []string{"p/app", "p/side"} {
					spec, _ := fake.Spec(cs[slotIndex(t, cs, slot)].ID)
					if spec.NetworkMode != "container:"+infra {
						t.Errorf("%s network %q, want the infra container's", slot, spec.NetworkMode)
					}
				}
			}},
		{name: "create/a pod of one container has no infra container", after: pods(onePod("p")),
			want: []string{"EnsureImage(example.org/app:1)", "Create(p/app)", "Start(p/app)"}},
		{name: "create/volumes before the containers", after: pods(withVolume),
			want: []string{"EnsureImage(example.org/app:1)", "EnsureImage(example.org/side:1)", "EnsureImage(example.org/pause:1)",
				"EnsureVolume(p/data)", "Create(p/POD)", "Start(p/POD)", "Create(p/app)", "Start(p/app)", "Create(p/side)", "Start(p/side)"}},
		{name: "recreate/the new image is made present before the old container is stopped, has its restart policy cleared and is stopped again, and is removed once the new one started",
			before: pods(onePod("p")), after: pods(newImage),
			want: []string{"EnsureImage(example.org/app:2)", "Stop(p/app)", "NoRestart(p/app)", "Stop(p/app)", "Create(p/app)", "Start(p/app)", "Remove(p/app)"}},
		{name: "recreate infra/a pod whose containers share its infra container's namespace: app containers taken down first, the infra container last, then created infra first",
			before: pods(twoPod("p")), after: pods(edit(twoPod("p"), func(m *manifest.Manifest) { m.Labels = map[string]string{"team": "a"} })),
			want: []string{"EnsureImage(example.org/app:1)", "EnsureImage(example.org/side:1)", "EnsureImage(example.org/pause:1)",
				"Stop(p/app)", "Remove(p/app)", "Stop(p/side)", "Remove(p/side)", "Stop(p/POD)", "Remove(p/POD)",
				"Create(p/POD)", "Start(p/POD)", "Create(p/app)", "Start(p/app)", "Create(p/side)", "Start(p/side)"}},
		{name: "networks/an image and a network pods share are looked for once a pass; another setting of the network once more",
			after: pods(onNetwork("a", "web", false), onNetwork("b", "db", false), onNetwork("c", "cache", true)),
			want: []string{"EnsureImage(example.org/app:1)", "EnsureNetwork(shop_default)", "Create(a/app)", "Start(a/app)",
				"Create(b/app)", "Start(b/app)",
				"EnsureNetwork(shop_default)", "Create(c/app)", "Start(c/app)"}},
		{name: "images/an image pulled Always is asked for by every pod",
			after: pods(edit(onePod("a"), pullAlways), edit(onePod("b"), pullAlways)),
			want:  []string{"EnsureImage(example.org/app:1)", "Create(a/app)", "Start(a/app)", "EnsureImage(example.org/app:1)", "Create(b/app)", "Start(b/app)"}},
		{name: "recreate/a pod with a fixed address on a network: the old container is removed before its successor is created",
			before: pods(withAddress(onePod("p"))), after: pods(withAddress(newImage)),
			want: []string{"EnsureImage(example.org/app:2)", "Stop(p/app)", "Remove(p/app)", "EnsureNetwork(fixed)", "Create(p/app)", "Start(p/app)"}},
		{name: "remove/pod removal: app containers first, the infra container last, then its volumes",
			before: pods(withVolume), after: nil,
			want: []string{"Stop(p/app)", "Remove(p/app)", "Stop(p/side)", "Remove(p/side)", "Stop(p/POD)", "Remove(p/POD)", "RemoveVolume(p/data)"}},
		{name: "remove/removals first: a pod that frees a host port goes before the pod that takes it",
			before: pods(twoPod("a")), after: pods(twoPod("b")),
			want: []string{"Stop(a/app)", "Remove(a/app)", "Stop(a/side)", "Remove(a/side)", "Stop(a/POD)", "Remove(a/POD)",
				"EnsureImage(example.org/app:1)", "EnsureImage(example.org/side:1)", "EnsureImage(example.org/pause:1)",
				"Create(b/POD)", "Start(b/POD)", "Create(b/app)", "Start(b/app)", "Create(b/side)", "Start(b/side)"}},
		{name: "restart/a stopped container is started again, its restart policy set back first; nothing else, no volume touched",
			before: pods(onePod("p")), after: pods(onePod("p")),
			mutate: func(t *testing.T, fake *synctest.Fake) {
				cs := listed(t, fake)
				if err := fake.Stop(t.Context(), cs[0].ID, 0); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"RestoreRestart(p/app)", "Start(p/app)"}},
		{name: "restart/infra container stopped: started, then the running app containers restarted into its network",
			before: pods(twoPod("p")), after: pods(twoPod("p")),
			mutate: func(t *testing.T, fake *synctest.Fake) {
				cs := listed(t, fake)
				if err := fake.Stop(t.Context(), cs[slotIndex(t, cs, "p/POD")].ID, 0); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"Start(p/POD)", "Stop(p/app)", "Start(p/app)", "Stop(p/side)", "Start(p/side)"}},
		{name: "backoff/a pod backing off after a failure is not touched",
			before: pods(onePod("p")), after: pods(newImage),
			opts: func(o *hsync.ApplyOptions) { o.Skip = func(id string) bool { return id == "p" } },
			want: nil},
		{name: "pulling/while its new image is pulled the running version is left as it is",
			before: pods(onePod("p")), after: pods(newImage),
			opts: func(o *hsync.ApplyOptions) {
				o.Images = func(_ context.Context, ref, _ string) (bool, error) { return ref == "example.org/app:2", nil }
			},
			want: nil, pulling: []string{"example.org/app:2"}},
		{name: "duplicate/a slot's duplicate is removed, and its recreated container created",
			before: pods(onePod("p")), mutate: startDuplicate("p/app"), after: pods(newImage),
			want: []string{"EnsureImage(example.org/app:2)", "Stop(p/app)", "NoRestart(p/app)", "Stop(p/app)", "Stop(p/app)", "Remove(p/app)", "Create(p/app)", "Start(p/app)", "Remove(p/app)"},
			check: func(t *testing.T, fake *synctest.Fake) {
				if cs := listed(t, fake); len(cs) != 1 || cs[0].Image != "example.org/app:2" {
					t.Errorf("containers %+v, want one of example.org/app:2", cs)
				}
			}},
		{name: "duplicate/a stopped slot's duplicate is removed, and the slot's container started",
			before: pods(onePod("p")), after: pods(onePod("p")),
			mutate: func(t *testing.T, fake *synctest.Fake) {
				startDuplicate("p/app")(t, fake)
				cs := listed(t, fake)
				newest := cs[0]
				for _, c := range cs[1:] {
					if c.Created.After(newest.Created) {
						newest = c
					}
				}
				if err := fake.Stop(t.Context(), newest.ID, 0); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"Stop(p/app)", "Remove(p/app)", "RestoreRestart(p/app)", "Start(p/app)"}},
		{name: "duplicate/a duplicate infra container is removed, the pod's own kept",
			before: pods(twoPod("p")), mutate: startDuplicate("p/POD"), after: pods(twoPod("p")),
			want: []string{"Stop(p/POD)", "Remove(p/POD)"},
			check: func(t *testing.T, fake *synctest.Fake) {
				if cs := listed(t, fake); len(cs) != 3 {
					t.Errorf("%d containers, want app, side and one infra container", len(cs))
				}
			}},
		{name: "keep/a converged pod costs no call", before: pods(twoPod("p")), after: pods(twoPod("p")), want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := converge(t, nil, tt.before)
			if tt.mutate != nil {
				tt.mutate(t, fake)
			}
			before := listed(t, fake)
			fake.Reset()
			opts := tableApplyOptions(nil)
			if tt.opts != nil {
				tt.opts(&opts)
			}
			plan := hsync.MakePlan(tt.after, before, hsync.PlanOptions{Prune: true})
			var pulling []string
			for _, r := range hsync.Apply(t.Context(), fake, plan, opts, slog.New(slog.DiscardHandler)) {
				if r.Err != nil {
					t.Fatalf("apply pod %s: %v", r.ID, r.Err)
				}
				pulling = append(pulling, r.Pulling...)
			}
			calls := fake.Calls()
			after := listed(t, fake)
			if got := renderCalls(calls, before, after); !slices.Equal(got, tt.want) {
				t.Errorf("calls:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
			if !slices.Equal(pulling, tt.pulling) {
				t.Errorf("pulling %q, want %q", pulling, tt.pulling)
			}
			for _, c := range after {
				if c.State != hruntime.StateRunning {
					t.Errorf("%s/%s %s after apply, want running", c.Pod(), c.Slot(), c.State)
				}
			}
			if tt.check != nil {
				tt.check(t, fake)
			}
		})
	}
}
