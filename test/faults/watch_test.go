//go:build faults

package faults

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	hruntime "github.com/hostlet/hostlet/runtime"
)

// event is one container event of the instance, as the engine reported it.
type event struct {
	Time   time.Time
	Action string
	ID     string
	Pod    string
	Slot   string
}

// trigger calls fire once, on the n-th event that match accepts.
type trigger struct {
	match func(event) bool
	n     int
	seen  int
	fire  func(event)
	fired chan event
}

// watcher records every container event of one instance from the engine's
// event stream, reconnecting (and replaying from the last event seen)
// when the engine restarts, and fires triggers as events arrive.
type watcher struct {
	eng      *engine
	instance string

	mu       sync.Mutex
	events   []event
	seen     map[string]bool
	triggers []*trigger
	last     time.Time
}

func newWatcher(eng *engine, instance string) *watcher {
	return &watcher{eng: eng, instance: instance, seen: map[string]bool{}, last: time.Now()}
}

// run follows the event stream until ctx ends.
func (w *watcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		w.follow(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *watcher) follow(ctx context.Context) {
	cli, err := w.eng.client()
	if err != nil {
		return
	}
	defer cli.Close()
	w.mu.Lock()
	since := w.last.Add(-time.Second)
	w.mu.Unlock()
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("label", hruntime.LabelInstance+"="+w.instance))
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, errs := cli.Events(sctx, events.ListOptions{Filters: f, Since: strconv.FormatInt(since.Unix(), 10)})
	for {
		select {
		case <-ctx.Done():
			return
		case <-errs:
			return
		case m := <-msgs:
			w.record(m)
		}
	}
}

func (w *watcher) record(m events.Message) {
	key := fmt.Sprintf("%d/%s/%s", m.TimeNano, m.Actor.ID, m.Action)
	ev := event{
		Time: time.Unix(0, m.TimeNano), Action: string(m.Action), ID: m.Actor.ID,
		Pod: m.Actor.Attributes[hruntime.LabelPod], Slot: m.Actor.Attributes[hruntime.LabelContainer],
	}
	w.mu.Lock()
	if w.seen[key] {
		w.mu.Unlock()
		return
	}
	w.seen[key] = true
	w.events = append(w.events, ev)
	if ev.Time.After(w.last) {
		w.last = ev.Time
	}
	var fire []*trigger
	for _, tr := range w.triggers {
		if tr.seen < tr.n && tr.match(ev) {
			tr.seen++
			if tr.seen == tr.n {
				fire = append(fire, tr)
			}
		}
	}
	w.mu.Unlock()
	for _, tr := range fire {
		tr.fire(ev)
		tr.fired <- ev
	}
}

// on registers fire to run, in the watcher's goroutine, on the n-th event
// from now that match accepts. The returned channel receives that event.
func (w *watcher) on(match func(event) bool, n int, fire func(event)) (<-chan event, func()) {
	tr := &trigger{match: match, n: n, fire: fire, fired: make(chan event, 1)}
	w.mu.Lock()
	w.triggers = append(w.triggers, tr)
	w.mu.Unlock()
	cancel := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i, x := range w.triggers {
			if x == tr {
				w.triggers = append(w.triggers[:i], w.triggers[i+1:]...)
				return
			}
		}
	}
	return tr.fired, cancel
}

// destroyed returns the IDs of the containers destroyed at or after since.
func (w *watcher) destroyed(since time.Time) map[string]event {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]event{}
	for _, ev := range w.events {
		if ev.Action == string(events.ActionDestroy) && !ev.Time.Before(since.Add(-50*time.Millisecond)) {
			out[ev.ID] = ev
		}
	}
	return out
}
