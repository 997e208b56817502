package sources

import (
	"context"
	"errors"
	"time"

	"github.com/hostlet/hostlet/manifest"
)

// Update is one message from a source: its whole set of manifests now, or
// the error that stopped it from reading them. A source never sends a
// partial set; after an error the last good set stands.
type Update struct {
	Source    string
	Revision  string
	Files     int
	Manifests []manifest.Sourced
	// Err, when set, means the read failed; Manifests is empty.
	Err error
	// Took is how long the read took (for metrics); 0 when unknown.
	Took time.Duration
	// Reply, when set, receives what the merge made of the update (see
	// Merger.Apply); it must have room for one answer. The push source
	// answers its POST from it.
	Reply chan<- Applied
}

// Source is one configured source of any type (sources/configured.New
// makes each). Read reads it once, for `hostlet validate` and `hostlet
// diff`: decode errors come back alongside the manifests that did decode.
// Run delivers updates until ctx ends, for `hostlet run`; it owns every
// goroutine it starts and ends them before returning.
type Source interface {
	Name() string
	Type() string
	Read(ctx context.Context) (manifest.Snapshot, error)
	Run(ctx context.Context, out chan<- Update)
}

// ErrPushOnly is what a push source's Read returns: it holds only what is
// pushed to the running hostlet, unknown to a read of its own.
var ErrPushOnly = errors.New("a push source holds only what is pushed to the running hostlet")

// send delivers u unless ctx ends first.
func send(ctx context.Context, out chan<- Update, u Update) bool {
	select {
	case out <- u:
		return true
	case <-ctx.Done():
		return false
	}
}
