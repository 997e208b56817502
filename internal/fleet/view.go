package fleet

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// KV is the etcd read the fleet view needs (a *clientv3.Client is one):
// Get with a range end, a limit and a store revision.
type KV interface {
	Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error)
}

// Bounds of what the fleet view reads.
const (
	// MaxStatusBytes: a status value (or a release record) over it is not
	// decoded; the host is listed with an error saying so.
	MaxStatusBytes = 4 << 20
	// MaxHosts: hosts past it (in key order) are left out with a note.
	MaxHosts = 100_000
	// pageKeys is how many keys one Get returns: a page holds at most
	// pageKeys values, whatever the fleet's size.
	pageKeys = 64
	// maxErrorBytes cuts a decode error quoted in a row.
	maxErrorBytes = 200
	// maxNamesInNote: a note names at most this many hosts.
	maxNamesInNote = 20
)

// Values of the status document the view counts (sync.PhaseRunning,
// sync.RolloutRolledBack: this package is imported by sources and must
// not import sync or api).
const (
	phaseRunning      = "Running"
	phasePending      = "Pending"
	phaseFailed       = "Failed"
	phaseSucceeded    = "Succeeded"
	rolloutRolledBack = "RolledBack"
	sourceTypeGit     = "git"
)

// PhaseOrder is the order pod phases are shown in; other phases follow,
// sorted.
var PhaseOrder = []string{phaseRunning, phasePending, phaseFailed, phaseSucceeded}

// View is the fleet as etcd holds it: every host's last report, summed
// up, and the latest release.
type View struct {
	// LatestRelease is the newest release's revision ("" when there is
	// none: then no host is behind).
	LatestRelease string    `json:"latestRelease"`
	ReleaseTime   time.Time `json:"releaseTime,omitzero"`
	// ReleaseState is the latest release's state as publish records it
	// (Waiting, Complete, Halted; "" when the record has none), with
	// the reason it gives.
	ReleaseState  string `json:"releaseState,omitempty"`
	ReleaseReason string `json:"releaseReason,omitempty"`
	// Hosts: those behind the latest release first, then by hostname.
	Hosts []HostRow `json:"hosts"`
	// Notes say what was left out and why (hosts past MaxHosts, release
	// records that do not decode, hosts whose labels are unknown while a
	// selector is given); [] when none.
	Notes []string `json:"notes"`
}

// HostRow is one host of the fleet view.
type HostRow struct {
	Host string `json:"host"`
	// Alive: the host's liveness key exists (its lease has not lapsed).
	Alive  bool              `json:"alive"`
	Labels map[string]string `json:"labels"`
	// Revision is what the host's git sources report (the one at the
	// latest release when one does), else its first source's.
	Revision string `json:"revision"`
	// Behind: a release exists and none of the host's sources reports it.
	Behind bool `json:"behind"`
	// Pods counts the host's pods by phase.
	Pods     map[string]int `json:"pods"`
	LastSync LastSync       `json:"lastSync"`
	// Reported is when the host wrote the report.
	Reported time.Time `json:"reported,omitzero"`
	// Errors counts source errors and rejected manifests.
	Errors int `json:"errors"`
	// Rollbacks counts pods whose rollout is RolledBack.
	Rollbacks int `json:"rollbacks"`
	// Error says why the host's status could not be read ("" when it
	// was); the other fields are then empty.
	Error string `json:"error,omitempty"`

	// revisions are every source's revision.
	revisions []string
}

// LastSync is when the host last synced and how that went.
type LastSync struct {
	Start time.Time `json:"start,omitzero"`
	Error string    `json:"error"`
}

// statusDoc is the part of the status document (api.Document) the view
// reads.
type statusDoc struct {
	Labels   map[string]string `json:"labels"`
	Time     time.Time         `json:"time"`
	LastSync struct {
		Start time.Time `json:"start"`
		Error string    `json:"error"`
	} `json:"lastSync"`
	Sources []struct {
		Type     string `json:"type"`
		Revision string `json:"revision"`
		Error    string `json:"error"`
	} `json:"sources"`
	Pods []struct {
		Phase   string `json:"phase"`
		Rollout *struct {
			State string `json:"state"`
		} `json:"rollout"`
	} `json:"pods"`
	Rejected []json.RawMessage `json:"rejected"`
}

// releaseRecord is the part of a release record (ReleaseKey) the view
// reads.
type releaseRecord struct {
	Rev    string    `json:"rev"`
	Time   time.Time `json:"time"`
	State  string    `json:"state"`
	Reason string    `json:"reason"`
}

// Rows reads the fleet from etcd under prefix (the hosts' etcd.prefix):
// the status of every host (<prefix>/status/<host>) whose labels sel
// matches, its liveness key (<prefix>/alive/<host>) and the release
// records (<prefix>/releases/<rev>), all at one store revision, a page
// of keys at a time. The latest release is the one with the newest
// "time", then the newest create revision. A status that cannot be read
// makes an error in its row, never an error of Rows; only etcd failing
// does.
func Rows(ctx context.Context, kv KV, prefix string, sel Selector) (View, error) {
	// The keys as the reporter (reporter.Keys) and publish (ReleaseKey)
	// write them.
	statusPrefix, alivePrefix := prefix+"/status/", prefix+"/alive/"
	releasePrefix := path.Join("/", prefix, "releases") + "/"
	v := View{Hosts: []HostRow{}, Notes: []string{}}

	var rev int64 // the store revision every page is read at
	if err := v.readHosts(ctx, kv, statusPrefix, sel, &rev); err != nil {
		return View{}, err
	}
	alive, err := readAlive(ctx, kv, alivePrefix, &rev)
	if err != nil {
		return View{}, err
	}
	latest, err := v.readLatestRelease(ctx, kv, releasePrefix, &rev)
	if err != nil {
		return View{}, err
	}
	v.LatestRelease, v.ReleaseTime = latest.Rev, latest.Time
	v.ReleaseState, v.ReleaseReason = latest.State, cut(latest.Reason, maxErrorBytes)
	v.markHosts(alive)
	return v, nil
}

// readHosts adds to v a row for every host status under statusPrefix
// whose labels sel matches (at most MaxHosts, with a note past them), and
// a note naming the hosts whose labels cannot be read when sel has pairs
// to check.
func (v *View) readHosts(ctx context.Context, kv KV, statusPrefix string, sel Selector, rev *int64) error {
	var unknown []string
	err := list(ctx, kv, statusPrefix, false, rev, func(kv *mvccpb.KeyValue) bool {
		host := strings.TrimPrefix(string(kv.Key), statusPrefix)
		if len(v.Hosts) == MaxHosts {
			v.Notes = append(v.Notes, fmt.Sprintf("more than %d hosts: those after %s left out", MaxHosts, v.Hosts[len(v.Hosts)-1].Host))
			return false
		}
		row, labelsKnown := hostRow(host, kv.Value)
		switch {
		case !labelsKnown && len(sel.pairs) > 0:
			unknown = append(unknown, host)
		case sel.Matches(row.Labels):
			v.Hosts = append(v.Hosts, row)
		}
		return true
	})
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		names := strings.Join(unknown[:min(len(unknown), maxNamesInNote)], ", ")
		if len(unknown) > maxNamesInNote {
			names += fmt.Sprintf(" and %d more", len(unknown)-maxNamesInNote)
		}
		v.Notes = append(v.Notes, fmt.Sprintf("selector %s not checked for %d host(s) whose status cannot be read: %s", sel, len(unknown), names))
	}
	return nil
}

// readAlive returns the hosts that have a liveness key under alivePrefix.
func readAlive(ctx context.Context, kv KV, alivePrefix string, rev *int64) (map[string]bool, error) {
	alive := map[string]bool{}
	err := list(ctx, kv, alivePrefix, true, rev, func(kv *mvccpb.KeyValue) bool {
		alive[strings.TrimPrefix(string(kv.Key), alivePrefix)] = true
		return true
	})
	if err != nil {
		return nil, err
	}
	return alive, nil
}

// readLatestRelease returns the latest of the release records under
// releasePrefix (the newest "time", then the newest create revision),
// adding to v a note for every record it cannot decode.
func (v *View) readLatestRelease(ctx context.Context, kv KV, releasePrefix string, rev *int64) (releaseRecord, error) {
	var latest releaseRecord
	var latestCreate int64
	err := list(ctx, kv, releasePrefix, false, rev, func(kv *mvccpb.KeyValue) bool {
		name := strings.TrimPrefix(string(kv.Key), releasePrefix)
		r, err := decodeRelease(name, kv.Value)
		if err != nil {
			v.Notes = append(v.Notes, fmt.Sprintf("release %s left out: %s", name, err))
			return true
		}
		if latest.Rev == "" || r.Time.After(latest.Time) || (r.Time.Equal(latest.Time) && kv.CreateRevision > latestCreate) {
			latest, latestCreate = r, kv.CreateRevision
		}
		return true
	})
	if err != nil {
		return releaseRecord{}, err
	}
	return latest, nil
}

// markHosts sets each row's liveness and, when there is a latest
// release, whether the host runs it (Revision) or is behind; then sorts
// the hosts behind first, each group by name.
func (v *View) markHosts(alive map[string]bool) {
	for i := range v.Hosts {
		h := &v.Hosts[i]
		h.Alive = alive[h.Host]
		if v.LatestRelease == "" {
			continue
		}
		if slices.Contains(h.revisions, v.LatestRelease) {
			h.Revision = v.LatestRelease
		} else {
			h.Behind = true
		}
	}
	slices.SortStableFunc(v.Hosts, func(a, b HostRow) int {
		if a.Behind != b.Behind {
			if a.Behind {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Host, b.Host)
	})
}

// list calls fn with every key under prefix, in key order, a page at a
// time, until fn returns false. The first page read sets *rev when it is
// 0; every page is read at *rev, so the view is one moment of the store.
func list(ctx context.Context, kv KV, prefix string, keysOnly bool, rev *int64, fn func(*mvccpb.KeyValue) bool) error {
	end := clientv3.GetPrefixRangeEnd(prefix)
	from := prefix
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(pageKeys), clientv3.WithRev(*rev)}
		if keysOnly {
			opts = append(opts, clientv3.WithKeysOnly())
		}
		resp, err := kv.Get(ctx, from, opts...)
		if err != nil {
			return fmt.Errorf("read %s from etcd: %w", prefix, err)
		}
		if *rev == 0 && resp.Header != nil {
			*rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if !fn(kv) {
				return nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// hostRow sums up one host's status value; labelsKnown is false when the
// value could not be read.
func hostRow(host string, value []byte) (row HostRow, labelsKnown bool) {
	row = HostRow{Host: host, Labels: map[string]string{}, Pods: map[string]int{}}
	if len(value) > MaxStatusBytes {
		row.Error = fmt.Sprintf("status of %d bytes is over the limit of %d: not read", len(value), MaxStatusBytes)
		return row, false
	}
	var doc statusDoc
	if err := json.Unmarshal(value, &doc); err != nil {
		row.Error = "status does not decode: " + cut(err.Error(), maxErrorBytes)
		return row, false
	}
	if doc.Labels != nil {
		row.Labels = doc.Labels
	}
	row.Reported = doc.Time
	row.LastSync = LastSync{Start: doc.LastSync.Start, Error: doc.LastSync.Error}
	for _, s := range doc.Sources {
		if s.Error != "" {
			row.Errors++
		}
	}
	row.Errors += len(doc.Rejected)
	for _, p := range doc.Pods {
		row.Pods[p.Phase]++
		if p.Rollout != nil && p.Rollout.State == rolloutRolledBack {
			row.Rollbacks++
		}
	}
	// The revision: the first git source's (a git source with via: etcd
	// reports the release it runs; the status does not say which git
	// sources are read through etcd), else the first source's.
	for _, s := range doc.Sources {
		if s.Type == sourceTypeGit && s.Revision != "" {
			row.Revision = s.Revision
			break
		}
	}
	if row.Revision == "" && len(doc.Sources) > 0 {
		row.Revision = doc.Sources[0].Revision
	}
	for _, s := range doc.Sources {
		row.revisions = append(row.revisions, s.Revision)
	}
	return row, true
}

// decodeRelease reads a release record; its rev defaults to the key's
// name.
func decodeRelease(name string, value []byte) (releaseRecord, error) {
	if len(value) > MaxStatusBytes {
		return releaseRecord{}, fmt.Errorf("record of %d bytes is over the limit of %d", len(value), MaxStatusBytes)
	}
	var r releaseRecord
	if err := json.NewDecoder(bytes.NewReader(value)).Decode(&r); err != nil {
		return releaseRecord{}, fmt.Errorf("record does not decode: %s", cut(err.Error(), maxErrorBytes))
	}
	if r.Rev == "" {
		r.Rev = name
	}
	return r, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
