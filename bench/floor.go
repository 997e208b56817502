package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
)

// Pod shapes: what one pod of a scenario holds.
const (
	// shapeSingle is one app container publishing its own port: hostlet
	// makes no infra container for it.
	shapeSingle = "single"
	// shapePair is two app containers: hostlet makes an infra container
	// from the pause image that holds the network namespace and publishes
	// both ports, and the two app containers join it
	// (NetworkMode container:<infra>), as for every pod of more than one
	// container (sync/spec.go).
	shapePair = "pair"
)

var allShapes = []string{shapeSingle, shapePair}

// appContainer is one app container of a pod shape, all of the demo image.
type appContainer struct {
	name string
	// port is the port it listens on and the pod publishes (each on its
	// own host port).
	port int
	// listen, when not "", is its LISTEN (the demo's listen address): the
	// containers of a pair share one network namespace, so the second
	// listens on another port.
	listen string
}

// shapeContainers are the app containers of a pod of each shape, in
// manifest order (hostlet creates and starts them in that order, after the
// infra container; it removes them in slot-name order, then the infra:
// "app" < "side", the same order).
var shapeContainers = map[string][]appContainer{
	shapeSingle: {{name: "app", port: 8080}},
	shapePair:   {{name: "app", port: 8080}, {name: "side", port: 8081, listen: ":8081"}},
}

// hasInfra reports whether pods of the shape get an infra container (more
// than one container, as sync.Pod.needsInfra decides).
func hasInfra(shape string) bool { return len(shapeContainers[shape]) > 1 }

// portsPerPod is how many host ports one pod of the shape publishes: one
// per app container, each answering /env on it.
func portsPerPod(shape string) int { return len(shapeContainers[shape]) }

// env is the environment of app container c, in the order the manifests
// give it.
func (c appContainer) env(value string) []string {
	env := []string{envName + "=" + value}
	if c.listen != "" {
		env = append(env, "LISTEN="+c.listen)
	}
	return env
}

// infraStopSeconds is the stop timeout hostlet gives an infra container
// (infraSpec in sync/spec.go: 2 s).
const infraStopSeconds = 2

// engineAPI is the part of the Engine API the floor calls: the same four
// calls hostlet makes to create, start, stop and remove a container
// (runtime.Docker). dockerEngine sends them to the engine; tests record
// them.
type engineAPI interface {
	create(ctx context.Context, name string, cfg *container.Config, host *container.HostConfig) (string, error)
	start(ctx context.Context, id string) error
	stop(ctx context.Context, id string, timeoutSeconds int) error
	remove(ctx context.Context, id string) error
}

type dockerEngine struct{ cli *client.Client }

func (d dockerEngine) create(ctx context.Context, name string, cfg *container.Config, host *container.HostConfig) (string, error) {
	netCfg := &network.NetworkingConfig{}
	if m := host.NetworkMode; m != "" && m.IsUserDefined() {
		// As hostlet joins a Compose project's network: an alias per
		// container.
		netCfg.EndpointsConfig = map[string]*network.EndpointSettings{string(m): {Aliases: []string{name}}}
	}
	resp, err := d.cli.ContainerCreate(ctx, cfg, host, netCfg, nil, name)
	return resp.ID, err
}

func (d dockerEngine) start(ctx context.Context, id string) error {
	return d.cli.ContainerStart(ctx, id, container.StartOptions{})
}

func (d dockerEngine) stop(ctx context.Context, id string, timeoutSeconds int) error {
	return d.cli.ContainerStop(ctx, id, container.StopOptions{Timeout: &timeoutSeconds})
}

func (d dockerEngine) remove(ctx context.Context, id string) error {
	return d.cli.ContainerRemove(ctx, id, container.RemoveOptions{})
}

// floor creates, updates and removes the same containers hostlet would,
// in the same order within each pod, straight through the Engine API,
// with a fixed number of pods at once (workers).
type floor struct {
	api   engineAPI
	runID string
	// image is the demo image of the app containers, pause the image of
	// the infra containers (the one hostlet is configured with).
	image, pause string
	shape        string
	grace        int
	workers      int
	// ports are the host ports, portsPerPod(shape) per pod: pod i has
	// ports[i*k : (i+1)*k], one per app container.
	ports []int
	// owner is the value of ownerLabel on this floor's containers.
	owner string
	// network is the user-defined network single pods join (vFloorNet);
	// "" for Docker's default bridge.
	network string
	// lateRemove makes an update remove the old app containers after
	// the new ones started (vFloorLateRm; update).
	lateRemove bool
	pods       []floorPod
}

// floorPod holds the IDs of one pod's containers, and the value the app
// containers' env and names carry; old and oldValue those of the app
// containers an update with lateRemove stopped and has not removed yet.
type floorPod struct {
	infra    string
	apps     []string
	value    string
	old      []string
	oldValue string
}

// ownerLabel tells the floor's containers of one block from the others.
const ownerLabel = "hostlet-bench-owner"

func newFloor(api engineAPI, runID, image, pause, shape string, grace, workers int, ports []int, owner string) *floor {
	f := &floor{api: api, runID: runID, image: image, pause: pause, shape: shape, grace: grace, workers: workers, ports: ports, owner: owner}
	f.pods = make([]floorPod, len(ports)/portsPerPod(shape))
	return f
}

// name is the name of pod i's infra container (slot "infra").
func (f *floor) name(i int, slot string) string {
	return fmt.Sprintf("hbench-%s-%d-%s", f.owner, i, slot)
}

// appName is the name of pod i's app container slot of value: the value
// is in it, so an update's new container and the old one can exist at
// once (lateRemove), as hostlet's names carry the spec's hash; no call
// more.
func (f *floor) appName(i int, value, slot string) string {
	return fmt.Sprintf("hbench-%s-%d-%s-%s", f.owner, i, value, slot)
}

func (f *floor) labels() map[string]string {
	return map[string]string{runLabel: f.runID, ownerLabel: f.owner}
}

// publish maps pod i's container ports onto its host ports on 127.0.0.1.
func (f *floor) publish(i int, cs []appContainer, cfg *container.Config, host *container.HostConfig) {
	k := portsPerPod(f.shape)
	cfg.ExposedPorts = nat.PortSet{}
	host.PortBindings = nat.PortMap{}
	for j, c := range cs {
		p := nat.Port(strconv.Itoa(c.port) + "/tcp")
		cfg.ExposedPorts[p] = struct{}{}
		host.PortBindings[p] = append(host.PortBindings[p], nat.PortBinding{HostIP: "127.0.0.1", HostPort: strconv.Itoa(f.ports[i*k+j])})
	}
}

// infraConfig is pod i's infra container as hostlet makes it (infraSpec):
// the pause image with its own entrypoint, every port of the pod, restart
// always, a 2 s stop timeout.
func (f *floor) infraConfig(i int) (*container.Config, *container.HostConfig) {
	stop := infraStopSeconds
	cfg := &container.Config{Image: f.pause, Labels: f.labels(), StopTimeout: &stop}
	host := &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways}}
	f.publish(i, shapeContainers[f.shape], cfg, host)
	return cfg, host
}

// appConfig is app container j of pod i as hostlet makes it (appSpec): the
// demo image, the pod's env, its grace period as stop timeout, restart
// always; its own port when the pod has no infra container, else the
// infra container's network namespace.
func (f *floor) appConfig(i, j int, value, infraID string) (*container.Config, *container.HostConfig) {
	c := shapeContainers[f.shape][j]
	grace := f.grace
	cfg := &container.Config{Image: f.image, Env: c.env(value), Labels: f.labels(), StopTimeout: &grace}
	host := &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyAlways}}
	if infraID != "" {
		host.NetworkMode = container.NetworkMode("container:" + infraID)
	} else {
		f.publish(i, []appContainer{c}, cfg, host)
		if f.network != "" {
			host.NetworkMode = container.NetworkMode(f.network)
		}
	}
	return cfg, host
}

func (f *floor) createStart(ctx context.Context, name string, cfg *container.Config, host *container.HostConfig) (string, error) {
	id, err := f.api.create(ctx, name, cfg, host)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	if err := f.api.start(ctx, id); err != nil {
		return id, fmt.Errorf("start %s: %w", name, err)
	}
	return id, nil
}

func (f *floor) stopRemove(ctx context.Context, id, name string, timeout int) error {
	if id == "" {
		return nil
	}
	if err := f.api.stop(ctx, id, timeout); err != nil {
		return fmt.Errorf("stop %s: %w", name, err)
	}
	if err := f.api.remove(ctx, id); err != nil {
		return fmt.Errorf("remove %s: %w", name, err)
	}
	return nil
}

// createPod creates and starts pod i: the infra container first (pairs),
// then the app containers in manifest order.
func (f *floor) createPod(ctx context.Context, i int, value string) error {
	p := &f.pods[i]
	if hasInfra(f.shape) {
		cfg, host := f.infraConfig(i)
		id, err := f.createStart(ctx, f.name(i, "infra"), cfg, host)
		p.infra = id
		if err != nil {
			return err
		}
	}
	return f.createApps(ctx, i, value)
}

func (f *floor) createApps(ctx context.Context, i int, value string) error {
	p := &f.pods[i]
	p.apps, p.value = make([]string, len(shapeContainers[f.shape])), value
	for j, c := range shapeContainers[f.shape] {
		cfg, host := f.appConfig(i, j, value, p.infra)
		id, err := f.createStart(ctx, f.appName(i, value, c.name), cfg, host)
		p.apps[j] = id
		if err != nil {
			return err
		}
	}
	return nil
}

// removeApps stops and removes pod i's app containers in order.
func (f *floor) removeApps(ctx context.Context, i int) error {
	p := &f.pods[i]
	for j, c := range shapeContainers[f.shape] {
		if j >= len(p.apps) {
			break
		}
		if err := f.stopRemove(ctx, p.apps[j], f.appName(i, p.value, c.name), f.grace); err != nil {
			return err
		}
		p.apps[j] = ""
	}
	return nil
}

// updatePod is what hostlet does when the app containers' env changed:
// the infra container (whose hash holds only ports and labels) stays; the
// app containers are stopped and removed, then created and started anew,
// each in manifest order.
func (f *floor) updatePod(ctx context.Context, i int, value string) error {
	if err := f.removeApps(ctx, i); err != nil {
		return err
	}
	return f.createApps(ctx, i, value)
}

// replaceAppsLate is updatePod with the old app containers only stopped:
// each is stopped (which frees its ports, on the host or in the infra
// container's namespace), then the new ones are created and started under
// names of their own, each in manifest order; removeOld removes the old
// ones. The infra container stays, as in updatePod: the new app
// containers join its namespace as the old ones did.
func (f *floor) replaceAppsLate(ctx context.Context, i int, value string) error {
	p := &f.pods[i]
	if value == p.value {
		return fmt.Errorf("pod %d: update to the value it has (%s): the new containers' names would be the old ones'", i, value)
	}
	p.old, p.oldValue = p.apps, p.value
	for j, id := range p.old {
		if id == "" {
			continue
		}
		if err := f.api.stop(ctx, id, f.grace); err != nil {
			return fmt.Errorf("stop %s: %w", f.appName(i, p.oldValue, shapeContainers[f.shape][j].name), err)
		}
	}
	return f.createApps(ctx, i, value)
}

// removeOld removes the app containers of pod i that replaceAppsLate
// stopped, in manifest order.
func (f *floor) removeOld(ctx context.Context, i int) error {
	p := &f.pods[i]
	for j, id := range p.old {
		if id == "" {
			continue
		}
		if err := f.api.remove(ctx, id); err != nil {
			return fmt.Errorf("remove %s: %w", f.appName(i, p.oldValue, shapeContainers[f.shape][j].name), err)
		}
		p.old[j] = ""
	}
	p.old = nil
	return nil
}

// removePod stops and removes the app containers, then the infra.
func (f *floor) removePod(ctx context.Context, i int) error {
	if err := f.removeApps(ctx, i); err != nil {
		return err
	}
	p := &f.pods[i]
	if err := f.stopRemove(ctx, p.infra, f.name(i, "infra"), infraStopSeconds); err != nil {
		return err
	}
	p.infra = ""
	return nil
}

// each runs fn for every pod with f.workers pods at once and returns the
// first error.
func (f *floor) each(ctx context.Context, fn func(ctx context.Context, i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	idx := make(chan int)
	for range max(f.workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range f.pods {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return first
}

func (f *floor) create(ctx context.Context, value string) error {
	return f.each(ctx, func(ctx context.Context, i int) error { return f.createPod(ctx, i, value) })
}

// update replaces every pod's app containers with ones of value. With
// lateRemove the old ones are removed after the new ones started, as
// hostlet's late removal does (sync.Apply's removeLate): each pod's old
// app containers are stopped and its new ones created and started
// (replaceAppsLate), then, once every pod's are, the old ones removed
// (removeOld), f.workers pods at once each time; a pod's removals are off
// the way of every pod to answering.
func (f *floor) update(ctx context.Context, value string) error {
	if !f.lateRemove {
		return f.each(ctx, func(ctx context.Context, i int) error { return f.updatePod(ctx, i, value) })
	}
	if err := f.each(ctx, func(ctx context.Context, i int) error { return f.replaceAppsLate(ctx, i, value) }); err != nil {
		return err
	}
	return f.each(ctx, f.removeOld)
}

func (f *floor) remove(ctx context.Context) error { return f.each(ctx, f.removePod) }

// checkShape lists the containers of label (one block's pods, right after
// its create step) and says whether they are n pods of shape as hostlet
// makes them: single, n containers, none joining another's network
// namespace; pair, n infra containers of the pause image and 2n app
// containers, two in each infra container's namespace.
func checkShape(ctx context.Context, cli *client.Client, label, shape, pause string, n int) (string, bool, error) {
	list, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return "", false, err
	}
	joined := map[string]int{}
	infra, apps := 0, 0
	for _, c := range list {
		if c.Image == pause {
			infra++
			joined[c.ID] = 0
		} else {
			apps++
		}
	}
	inNS := 0
	for _, c := range list {
		if id, ok := strings.CutPrefix(c.HostConfig.NetworkMode, "container:"); ok {
			if _, isInfra := joined[id]; isInfra {
				joined[id]++
				inNS++
			}
		}
	}
	k := len(shapeContainers[shape])
	ok := apps == k*n && infra == 0 && inNS == 0
	if hasInfra(shape) {
		ok = apps == k*n && infra == n && inNS == k*n
		for _, j := range joined {
			ok = ok && j == k
		}
	}
	detail := fmt.Sprintf("%d pods: %d containers, %d infra (pause image), %d app containers, %d of them in an infra container's network namespace", n, len(list), infra, apps, inNS)
	return detail, ok, nil
}
