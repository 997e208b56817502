package fleet

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Wave is one step of a release (`--wave 'canary: role=canary'`): the
// hosts its selector picks that no earlier wave picked.
type Wave struct {
	Name     string
	Selector Selector
}

var waveNameRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// ParseWave parses `NAME: SELECTOR` (the selector as ParseSelector takes
// it).
func ParseWave(s string) (Wave, error) {
	name, sel, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok {
		return Wave{}, fmt.Errorf("wave %q: want NAME: SELECTOR (e.g. 'canary: role=canary' or 'rest: *')", s)
	}
	if len(name) > 63 || !waveNameRE.MatchString(name) {
		return Wave{}, fmt.Errorf("wave %q: %q is not a wave name (letters, digits, - _ .)", s, name)
	}
	selector, err := ParseSelector(sel)
	if err != nil {
		return Wave{}, fmt.Errorf("wave %s: %w", name, err)
	}
	return Wave{Name: name, Selector: selector}, nil
}

// Host is a host of a release: its name and labels.
type Host struct {
	Name   string
	Labels map[string]string
}

// Assign puts each host in the first wave whose selector matches its
// labels, keeping the hosts' order inside a wave. Without waves every host
// is in one wave named "all". A host that no wave picks is an error (all
// of them named): a release must not leave hosts out unsaid.
func Assign(hosts []Host, waves []Wave) ([][]Host, []Wave, error) {
	if len(waves) == 0 {
		waves = []Wave{{Name: "all"}}
	}
	seen := map[string]bool{}
	for _, w := range waves {
		if seen[w.Name] {
			return nil, nil, fmt.Errorf("wave %s given twice", w.Name)
		}
		seen[w.Name] = true
	}
	out := make([][]Host, len(waves))
	var left []string
	for _, h := range hosts {
		i := 0
		for i < len(waves) && !waves[i].Selector.Matches(h.Labels) {
			i++
		}
		if i == len(waves) {
			left = append(left, h.Name)
			continue
		}
		out[i] = append(out[i], h)
	}
	if len(left) > 0 {
		return nil, nil, fmt.Errorf("no wave picks host(s) %s (add a last wave 'rest: *'?)", strings.Join(left, ", "))
	}
	return out, waves, nil
}

// Release and wave states, as the release record holds them.
const (
	// StatePending: not written yet.
	StatePending = "Pending"
	// StateWaiting: written; waiting for its hosts to report.
	StateWaiting = "Waiting"
	// StateComplete: every host of it reported the release, its pods
	// Complete (for a release: every wave did).
	StateComplete = "Complete"
	// StateHalted: a host rolled back, failed or stayed silent; later
	// waves are not written.
	StateHalted = "Halted"
	// StateAborted: a halted release taken back (`hostlet publish
	// --abort`): the release before it was published again.
	StateAborted = "Aborted"
)

// Release is the record of a release, written by `hostlet publish` at
// ReleaseKey(prefix, Rev) as JSON and updated as its waves go.
type Release struct {
	// Rev is the git commit published (full SHA); Ref what was asked
	// (a branch, a tag, a SHA).
	Rev string `json:"rev"`
	Ref string `json:"ref"`
	// Time is when the release started; Updated when the record was last
	// written.
	Time    time.Time `json:"time"`
	Updated time.Time `json:"updated"`
	// State is Waiting while waves go, then Complete or Halted (Reason
	// says why); Aborted once taken back.
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// HostsChanged are the hosts whose set this release changes, in
	// wave order.
	HostsChanged []string     `json:"hostsChanged"`
	Waves        []WaveRecord `json:"waves"`
}

// WaveRecord is one wave of a release record.
type WaveRecord struct {
	Name     string `json:"name"`
	Selector string `json:"selector"`
	// Hosts are every host of the wave; Changed those written (a host
	// whose set is unchanged is neither written nor waited for).
	Hosts   []string `json:"hosts"`
	Changed []string `json:"changed"`
	State   string   `json:"state"`
	Reason  string   `json:"reason,omitempty"`
}
