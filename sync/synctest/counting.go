package synctest

import (
	"context"
	"errors"
	"maps"
	gosync "sync"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
	hsync "github.com/hostlet/hostlet/sync"
)

// Counting wraps a FullRuntime and counts the calls made through it, per
// method. It overrides every method of hsync.FullRuntime, so no call slips
// through the embedded interface uncounted. It is safe for concurrent use.
type Counting struct {
	hsync.FullRuntime

	mu     gosync.Mutex
	counts map[string]int
}

var _ hsync.FullRuntime = (*Counting)(nil)

// NewCounting returns a counting wrapper around rt.
func NewCounting(rt hsync.FullRuntime) *Counting {
	return &Counting{FullRuntime: rt, counts: map[string]int{}}
}

func (c *Counting) count(method string) {
	c.mu.Lock()
	c.counts[method]++
	c.mu.Unlock()
}

// Counts returns the number of calls per method since the wrapper was made
// or last Reset; methods not called are absent.
func (c *Counting) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Total returns the number of calls of every method.
func (c *Counting) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Reset sets every count to zero.
func (c *Counting) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}

// List counts and forwards.
func (c *Counting) List(ctx context.Context) ([]hruntime.Container, error) {
	c.count("List")
	return c.FullRuntime.List(ctx)
}

// Create counts and forwards.
func (c *Counting) Create(ctx context.Context, spec hruntime.ContainerSpec) (string, error) {
	c.count("Create")
	return c.FullRuntime.Create(ctx, spec)
}

// Start counts and forwards.
func (c *Counting) Start(ctx context.Context, id string) error {
	c.count("Start")
	return c.FullRuntime.Start(ctx, id)
}

// Stop counts and forwards.
func (c *Counting) Stop(ctx context.Context, id string, timeout time.Duration) error {
	c.count("Stop")
	return c.FullRuntime.Stop(ctx, id, timeout)
}

// NoRestart counts and forwards.
func (c *Counting) NoRestart(ctx context.Context, id string) error {
	c.count("NoRestart")
	return c.FullRuntime.NoRestart(ctx, id)
}

// RestoreRestart counts and forwards.
func (c *Counting) RestoreRestart(ctx context.Context, id, policy string) error {
	c.count("RestoreRestart")
	return c.FullRuntime.RestoreRestart(ctx, id, policy)
}

// Remove counts and forwards.
func (c *Counting) Remove(ctx context.Context, id string) error {
	c.count("Remove")
	return c.FullRuntime.Remove(ctx, id)
}

// EnsureImage counts and forwards.
func (c *Counting) EnsureImage(ctx context.Context, ref, pullPolicy string) error {
	c.count("EnsureImage")
	return c.FullRuntime.EnsureImage(ctx, ref, pullPolicy)
}

// EnsureVolume counts and forwards.
func (c *Counting) EnsureVolume(ctx context.Context, name string, labels map[string]string) error {
	c.count("EnsureVolume")
	return c.FullRuntime.EnsureVolume(ctx, name, labels)
}

// RemoveVolume counts and forwards.
func (c *Counting) RemoveVolume(ctx context.Context, name string) error {
	c.count("RemoveVolume")
	return c.FullRuntime.RemoveVolume(ctx, name)
}

// CheckVolume counts and forwards.
func (c *Counting) CheckVolume(ctx context.Context, name string) error {
	c.count("CheckVolume")
	return c.FullRuntime.CheckVolume(ctx, name)
}

// ListVolumes counts and forwards.
func (c *Counting) ListVolumes(ctx context.Context) ([]string, error) {
	c.count("ListVolumes")
	return c.FullRuntime.ListVolumes(ctx)
}

// EnsureNetwork counts and forwards.
func (c *Counting) EnsureNetwork(ctx context.Context, n hruntime.NetworkSpec, labels map[string]string) error {
	c.count("EnsureNetwork")
	return c.FullRuntime.EnsureNetwork(ctx, n, labels)
}

// Rename counts and forwards.
func (c *Counting) Rename(ctx context.Context, id, name string) error {
	c.count("Rename")
	return c.FullRuntime.Rename(ctx, id, name)
}

// NameHolder counts and forwards.
func (c *Counting) NameHolder(ctx context.Context, name string) (hruntime.Holder, error) {
	c.count("NameHolder")
	return c.FullRuntime.NameHolder(ctx, name)
}

// RemoveNetwork counts and forwards.
func (c *Counting) RemoveNetwork(ctx context.Context, name string) error {
	c.count("RemoveNetwork")
	return c.FullRuntime.RemoveNetwork(ctx, name)
}

// ListNetworks counts and forwards.
func (c *Counting) ListNetworks(ctx context.Context) ([]string, error) {
	c.count("ListNetworks")
	return c.FullRuntime.ListNetworks(ctx)
}

// Inspect counts and forwards.
func (c *Counting) Inspect(ctx context.Context, id string) (hruntime.Details, error) {
	c.count("Inspect")
	return c.FullRuntime.Inspect(ctx, id)
}

// Events counts and forwards.
func (c *Counting) Events(ctx context.Context) <-chan hruntime.Event {
	c.count("Events")
	return c.FullRuntime.Events(ctx)
}

// VolumeHostPath counts and forwards, to a runtime that has it
// (hsync.VolumeOwners).
func (c *Counting) VolumeHostPath(ctx context.Context, name string) (string, error) {
	c.count("VolumeHostPath")
	o, ok := c.FullRuntime.(hsync.VolumeOwners)
	if !ok {
		return "", errors.New("the wrapped runtime does not tell where its volumes are")
	}
	return o.VolumeHostPath(ctx, name)
}

// SameHostIDs forwards, to a runtime that has it (hsync.VolumeOwners).
func (c *Counting) SameHostIDs() error {
	o, ok := c.FullRuntime.(hsync.VolumeOwners)
	if !ok {
		return errors.New("the wrapped runtime does not tell whether it sees the host's ids")
	}
	return o.SameHostIDs()
}

// Exec counts and forwards.
func (c *Counting) Exec(ctx context.Context, id string, cmd []string) (int, error) {
	c.count("Exec")
	return c.FullRuntime.Exec(ctx, id, cmd)
}

// ImageUser counts and forwards.
func (c *Counting) ImageUser(ctx context.Context, ref string) (string, error) {
	c.count("ImageUser")
	return c.FullRuntime.ImageUser(ctx, ref)
}

// Wait counts and forwards.
func (c *Counting) Wait(ctx context.Context, id string) (int, error) {
	c.count("Wait")
	return c.FullRuntime.Wait(ctx, id)
}

// Build counts and passes on.
func (c *Counting) Build(ctx context.Context, spec hruntime.BuildSpec) (hruntime.BuildResult, error) {
	c.count("Build")
	return c.FullRuntime.Build(ctx, spec)
}

// ListBuilt counts and passes on.
func (c *Counting) ListBuilt(ctx context.Context, pod string) ([]hruntime.BuiltImage, error) {
	c.count("ListBuilt")
	return c.FullRuntime.ListBuilt(ctx, pod)
}

// RemoveImage counts and passes on.
func (c *Counting) RemoveImage(ctx context.Context, ref string) error {
	c.count("RemoveImage")
	return c.FullRuntime.RemoveImage(ctx, ref)
}
