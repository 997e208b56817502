package agent

import (
	"time"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// startupGrace is added to a source's timeout to bound the wait for it:
// its first answer can also wait on its validation.
const startupGrace = 5 * time.Second

// startupHold keeps a source's pods from the syncer while a source listed
// before it has not delivered a set yet (no saved set, and no answer since
// start), each such source for at most its timeout (+ startupGrace) since
// start: an ID two sources declare first runs from the source that wins it
// (the earlier one), not from a quicker one whose pod would be replaced a
// moment later. An error does not end a source's wait, its time limit
// does. The first source's pods are never held, nor anything once every
// source has delivered: a restart with saved sets holds nothing.
type startupHold struct {
	// until is, by source, when its wait ends (push sources: start; they
	// answer when pushed to).
	until map[string]time.Time
	done  bool
}

func newStartupHold(srcs []config.Source, start time.Time) *startupHold {
	h := &startupHold{until: make(map[string]time.Time, len(srcs))}
	for _, s := range srcs {
		h.until[s.Name] = start
		if s.Type != config.TypePush {
			h.until[s.Name] = start.Add(s.Timeout + startupGrace)
		}
	}
	return h
}

// desired is the desired set to hand the syncer at now: st's, without the
// pods the hold keeps.
func (h *startupHold) desired(st sources.State, now time.Time) hsync.Desired {
	d := toDesired(st)
	if h.done {
		return d
	}
	held := map[string]bool{} // the sources after one still waited for
	waiting := false
	for _, s := range st.Sources {
		held[s.Name] = waiting
		waiting = waiting || !s.Delivered && now.Before(h.until[s.Name])
	}
	if !waiting {
		// Every source delivered or is past its wait: for good.
		h.done = true
		return d
	}
	kept := d.Pods[:0:0]
	for _, p := range d.Pods {
		if !held[p.Source] {
			kept = append(kept, p)
		}
	}
	d.Pods = kept
	return d
}

// wait is how long from now until the next source's wait ends (0 once
// the hold has ended, or when none ends after now).
func (h *startupHold) wait(now time.Time) time.Duration {
	if h.done {
		return 0
	}
	var next time.Duration
	for _, u := range h.until {
		if d := u.Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}
