package sources

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hostlet/hostlet/manifest"
)

// DefaultValidateDeadline bounds the field checks of one update. Every
// check ends by construction (each loop is bounded by the input, which
// is bounded: manifest.MaxSourceManifests, manifest.MaxFileMarks), and
// 5,000 manifests check in well under a second: the deadline is the
// backstop for what was missed (a rule that grows too fast, a host path
// on a mount that does not answer).
const DefaultValidateDeadline = time.Minute

// ErrValidationOverdue is the error (wrapped) of an update whose field
// checks did not end within the deadline.
var ErrValidationOverdue = errors.New("validation did not end in time")

// precheck checks the fields of every manifest of a source's update (or
// saved set), filling the memo the merge reads them from, within the
// deadline. Past it, it returns an error (the update is refused, the
// source keeps its last good set) and names the source in Overdue until
// the checks end: the merge, and every other source's updates, go on
// meanwhile, as the merge of another source's set reads this source's
// results from the memo and never checks its fields itself.
//
// The checks run on a goroutine of their own, which ends when they do
// (by construction, see DefaultValidateDeadline). A source has at most
// one check in flight: while one is past its deadline, the source's
// updates are refused at once with the same error, starting nothing
// (apply keeps the latest for Retries).
func (m *Merger) precheck(source string, ms []manifest.Sourced) error {
	if len(ms) == 0 {
		return nil
	}
	deadline := m.opts.ValidateDeadline
	m.wmu.Lock()
	_, stuck := m.overdue[source]
	m.wmu.Unlock()
	if stuck {
		return overdueError(len(ms), deadline)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, s := range ms {
			if s.Origin.Source == "" {
				s.Origin.Source = source
			}
			_ = m.opts.Validate.Checker.Check(s, m.opts.Validate)
		}
	}()
	t := m.opts.Clock.NewTimer(deadline)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C():
	}
	start := m.opts.Clock.Now().Add(-deadline)
	m.wmu.Lock()
	m.overdue[source] = start
	m.wmu.Unlock()
	m.log.Error("validation of a source's update is past its deadline; the source keeps its last good set, the others go on", "source", source, "deadline", deadline)
	go func() {
		<-done
		m.wmu.Lock()
		delete(m.overdue, source)
		u, ok := m.pending[source]
		delete(m.pending, source)
		m.wmu.Unlock()
		m.log.Info("validation of a source's update ended after its deadline", "source", source, "took", m.opts.Clock.Since(start))
		if ok {
			m.retry(u)
		}
	}()
	return overdueError(len(ms), deadline)
}

// overdueError is the error of an update of n manifests refused because
// the source's checks are past the deadline.
func overdueError(n int, deadline time.Duration) error {
	return fmt.Errorf("checking the fields of its %d manifests took more than %s: %w; keeping its last good set", n, deadline, ErrValidationOverdue)
}

// retryLater keeps u, an update refused as its source's checks are past
// the deadline, to be handed to Retries when they end (the latest one of
// the source wins); at once if they have ended already.
func (m *Merger) retryLater(u Update) {
	u.Reply = nil // answered already
	m.wmu.Lock()
	_, stuck := m.overdue[u.Source]
	if stuck {
		m.pending[u.Source] = u
	}
	m.wmu.Unlock()
	if !stuck {
		m.retry(u)
	}
}

// retry hands u to Retries, unless a retry of every source is waiting
// there already (nobody reads it).
func (m *Merger) retry(u Update) {
	select {
	case m.retries <- u:
	default:
		m.log.Warn("retry of a source's update not taken", "source", u.Source)
	}
}

// Retries delivers the latest update of a source refused because its
// checks were past the deadline, once they have ended (without a Reply:
// it was answered). The update loop applies it as it does any update.
func (m *Merger) Retries() <-chan Update { return m.retries }

// Overdue describes the sources whose update's checks have run past the
// deadline and have not ended yet, in source order ("" none): /healthz
// fails while there is one.
func (m *Merger) Overdue() []string {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	var out []string
	for source, start := range m.overdue {
		out = append(out, fmt.Sprintf("source %s: checking its update has run for %s, past its deadline of %s", source, m.opts.Clock.Since(start).Round(time.Second), m.opts.ValidateDeadline))
	}
	slices.Sort(out)
	return out
}
