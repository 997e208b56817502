package imageupdate

import (
	"fmt"
	"strings"

	"github.com/distribution/reference"
)

// HostState is what one host reports of one pod that the updater must
// not go against: a version it rolled back, or an operator's hold.
type HostState struct {
	Host string
	Pod  string
	// Images are, by container, the images of the version rolled back
	// (RolledBack); none for a hold.
	Images   map[string]string
	Revision string
	Reason   string
	// HeldBy is who holds the pod ("" when not held).
	HeldBy string
}

// VetoFrom is the Veto the hosts' states make: a tag any host rolled back
// for the target's container is skipped (unless includeRolledBack), and
// a pod an operator holds anywhere moves to no tag.
func VetoFrom(states []HostState, includeRolledBack bool) Veto {
	return func(t Target, tag string) string {
		for _, s := range states {
			if s.Pod != t.Pod {
				continue
			}
			if s.HeldBy != "" {
				return fmt.Sprintf("the pod is held on %s by %s: %s", s.Host, s.HeldBy, s.Reason)
			}
			if !includeRolledBack && sameImageTag(s.Images[t.Container], t.Resolved, tag) {
				return fmt.Sprintf("rolled back on %s at %s: %s", s.Host, shortRev(s.Revision), s.Reason)
			}
		}
		return ""
	}
}

// sameImageTag reports whether image (as a host ran it) is the
// repository of resolved at tag.
func sameImageTag(image, resolved, tag string) bool {
	a, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return false
	}
	b, err := reference.ParseNormalizedNamed(resolved)
	if err != nil || a.Name() != b.Name() {
		return false
	}
	tagged, ok := a.(reference.Tagged)
	return ok && tagged.Tag() == tag
}

func shortRev(rev string) string {
	if _, after, ok := strings.Cut(rev, ":"); ok {
		rev = after
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev
}
