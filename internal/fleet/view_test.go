package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fakeKV is an etcd store in memory: Get honours a key or a range, a
// limit and keys-only, and logs each call's key.
type fakeKV struct {
	kvs   map[string]*mvccpb.KeyValue
	rev   int64
	calls []string
	err   error
}

func newFakeKV() *fakeKV { return &fakeKV{kvs: map[string]*mvccpb.KeyValue{}} }

func (f *fakeKV) put(key, value string) {
	f.rev++
	create := f.rev
	if old, ok := f.kvs[key]; ok {
		create = old.CreateRevision
	}
	f.kvs[key] = &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), CreateRevision: create, ModRevision: f.rev}
}

func (f *fakeKV) Get(_ context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	f.calls = append(f.calls, key)
	if f.err != nil {
		return nil, f.err
	}
	op := clientv3.OpGet(key, opts...)
	end := string(op.RangeBytes())
	resp := &clientv3.GetResponse{Header: &etcdserverpb.ResponseHeader{Revision: f.rev}}
	for _, k := range slices.Sorted(maps.Keys(f.kvs)) {
		if k != key && (end == "" || k < key || k >= end) {
			continue
		}
		if op.Limit() > 0 && int64(len(resp.Kvs)) == op.Limit() {
			resp.More = true
			break
		}
		stored := f.kvs[k]
		kv := &mvccpb.KeyValue{Key: stored.Key, Value: stored.Value, CreateRevision: stored.CreateRevision, ModRevision: stored.ModRevision}
		if op.IsKeysOnly() {
			kv.Value = nil
		}
		resp.Kvs = append(resp.Kvs, kv)
	}
	resp.Count = int64(len(resp.Kvs))
	return resp, nil
}

// statusJSON is a status document as a host writes it.
func statusJSON(labels string, revs []string, phases []string, rolledBack int, syncErr string, sourceErrs, rejected int) string {
	var srcs, pods, rej []string
	for i, r := range revs {
		e := ""
		if i < sourceErrs {
			e = "fetch failed"
		}
		srcs = append(srcs, fmt.Sprintf(`{"name":"s%d","type":"git","revision":%q,"error":%q}`, i, r, e))
	}
	for i, p := range phases {
		ro := `{"state":"Complete"}`
		if i < rolledBack {
			ro = `{"state":"RolledBack","reason":"crash"}`
		}
		pods = append(pods, fmt.Sprintf(`{"id":"p%d","phase":%q,"rollout":%s}`, i, p, ro))
	}
	for i := range rejected {
		rej = append(rej, fmt.Sprintf(`{"id":"r%d","source":"s0","reasons":["bad"]}`, i))
	}
	return fmt.Sprintf(`{"hostname":"h","labels":{%s},"version":"v1","time":"2026-12-05T01:00:00Z",
"lastSync":{"start":"2026-12-05T01:00:00Z","durationMs":3,"error":%q},
"sources":[%s],"pods":[%s],"rejected":[%s],"machine":{}}`,
		labels, syncErr, strings.Join(srcs, ","), strings.Join(pods, ","), strings.Join(rej, ","))
}

func TestFleetRows(t *testing.T) {
	const relA, relB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	type want struct {
		host      string
		alive     bool
		behind    bool
		revision  string
		pods      map[string]int
		errors    int
		rollbacks int
		err       string // part of the row's error
	}
	tests := []struct {
		name     string
		keys     [][2]string // put in order
		selector string
		latest   string
		want     []want
		notes    []string // parts of the notes, in order
	}{
		{
			name: "alive and not, behind first",
			keys: [][2]string{
				{"/f/releases/" + relA, `{"rev":"` + relA + `","time":"2026-12-01T00:00:00Z"}`},
				{"/f/releases/" + relB, `{"rev":"` + relB + `","time":"2026-12-02T00:00:00Z"}`},
				{"/f/status/a", statusJSON(`"role":"web"`, []string{relB}, []string{"Running", "Running"}, 0, "", 0, 0)},
				{"/f/status/b", statusJSON(`"role":"web"`, []string{relA}, []string{"Running", "Failed"}, 1, "", 1, 2)},
				{"/f/status/c", statusJSON(`"role":"db"`, []string{"7", relB}, nil, 0, "boom", 0, 0)},
				{"/f/alive/a", "x"},
				{"/f/alive/c", "x"},
				{"/f/alive/zz", "x"}, // alive, no status: not a row
				{"/f/statusx/d", statusJSON(``, nil, nil, 0, "", 0, 0)},
			},
			selector: "*",
			latest:   relB,
			want: []want{
				{host: "b", alive: false, behind: true, revision: relA, pods: map[string]int{"Running": 1, "Failed": 1}, errors: 3, rollbacks: 1},
				{host: "a", alive: true, revision: relB, pods: map[string]int{"Running": 2}},
				{host: "c", alive: true, revision: relB, pods: map[string]int{}},
			},
		},
		{
			name: "no release: nobody behind; selector",
			keys: [][2]string{
				{"/f/status/a", statusJSON(`"role":"web"`, []string{relA}, nil, 0, "", 0, 0)},
				{"/f/status/b", statusJSON(`"role":"db"`, []string{relB}, nil, 0, "", 0, 0)},
				{"/f/status/c", statusJSON(`"role":"web","zone":"a"`, []string{relB}, nil, 0, "", 0, 0)},
			},
			selector: "role=web",
			want: []want{
				{host: "a", revision: relA, pods: map[string]int{}},
				{host: "c", revision: relB, pods: map[string]int{}},
			},
		},
		{
			name: "latest by time, then by create revision",
			keys: [][2]string{
				{"/f/releases/" + relB, `{"rev":"` + relB + `","time":"2026-12-01T00:00:00Z"}`},
				{"/f/releases/" + relA, `{"rev":"` + relA + `","time":"2026-12-01T00:00:00Z"}`},
				{"/f/releases/old", `{"rev":"old","time":"2026-11-01T00:00:00Z"}`},
				{"/f/releases/bad", `{"rev":`},
				{"/f/status/a", statusJSON(``, []string{relA}, nil, 0, "", 0, 0)},
			},
			selector: "*",
			latest:   relA,
			want:     []want{{host: "a", revision: relA, pods: map[string]int{}}},
			notes:    []string{"release bad left out: record does not decode"},
		},
		{
			name: "undecodable and oversized status listed with an error",
			keys: [][2]string{
				{"/f/releases/" + relA, `{"rev":"` + relA + `","time":"2026-12-01T00:00:00Z"}`},
				{"/f/status/a", statusJSON(``, []string{relA}, nil, 0, "", 0, 0)},
				{"/f/status/bad", `{"hostname": 3`},
				{"/f/status/big", `{"hostname":"big","version":"` + strings.Repeat("x", MaxStatusBytes) + `"}`},
				{"/f/alive/bad", "x"},
			},
			selector: "*",
			latest:   relA,
			want: []want{
				{host: "bad", alive: true, behind: true, pods: map[string]int{}, err: "status does not decode"},
				{host: "big", behind: true, pods: map[string]int{}, err: "over the limit of 4194304: not read"},
				{host: "a", revision: relA, pods: map[string]int{}},
			},
		},
		{
			name: "undecodable status under a selector: a note",
			keys: [][2]string{
				{"/f/status/a", statusJSON(`"role":"web"`, []string{relA}, nil, 0, "", 0, 0)},
				{"/f/status/bad", `[]`},
			},
			selector: "role=web",
			want:     []want{{host: "a", revision: relA, pods: map[string]int{}}},
			notes:    []string{"selector role=web not checked for 1 host(s) whose status cannot be read: bad"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kv := newFakeKV()
			for _, p := range tt.keys {
				kv.put(p[0], p[1])
			}
			sel, err := ParseSelector(tt.selector)
			if err != nil {
				t.Fatal(err)
			}
			v, err := Rows(t.Context(), kv, "/f", sel)
			if err != nil {
				t.Fatal(err)
			}
			if v.LatestRelease != tt.latest {
				t.Errorf("latest release %q, want %q", v.LatestRelease, tt.latest)
			}
			if len(v.Hosts) != len(tt.want) {
				t.Fatalf("%d hosts %+v, want %d", len(v.Hosts), v.Hosts, len(tt.want))
			}
			for i, w := range tt.want {
				h := v.Hosts[i]
				if h.Host != w.host || h.Alive != w.alive || h.Behind != w.behind || h.Revision != w.revision ||
					!maps.Equal(h.Pods, w.pods) || h.Errors != w.errors || h.Rollbacks != w.rollbacks {
					t.Errorf("host %d: %+v, want %+v", i, h, w)
				}
				if (w.err == "") != (h.Error == "") || !strings.Contains(h.Error, w.err) {
					t.Errorf("host %s: error %q, want one with %q", h.Host, h.Error, w.err)
				}
			}
			if len(v.Notes) != len(tt.notes) {
				t.Fatalf("notes %q, want %q", v.Notes, tt.notes)
			}
			for i, n := range tt.notes {
				if !strings.Contains(v.Notes[i], n) {
					t.Errorf("note %q, want one with %q", v.Notes[i], n)
				}
			}
		})
	}
}

// TestFleetRowsPages: a fleet larger than a page is read a page at a
// time, every host once, in order.
func TestFleetRowsPages(t *testing.T) {
	kv := newFakeKV()
	const n = 3*pageKeys + 5
	for i := range n {
		kv.put(fmt.Sprintf("/f/status/h%04d", i), statusJSON(``, []string{"r"}, []string{"Running"}, 0, "", 0, 0))
		if i%2 == 0 {
			kv.put(fmt.Sprintf("/f/alive/h%04d", i), "x")
		}
	}
	v, err := Rows(t.Context(), kv, "/f", Selector{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Hosts) != n {
		t.Fatalf("%d hosts, want %d", len(v.Hosts), n)
	}
	for i, h := range v.Hosts {
		if want := fmt.Sprintf("h%04d", i); h.Host != want || h.Alive != (i%2 == 0) {
			t.Fatalf("host %d: %s alive %v, want %s alive %v", i, h.Host, h.Alive, want, i%2 == 0)
		}
	}
	statusGets := 0
	for _, c := range kv.calls {
		if strings.HasPrefix(c, "/f/status/") {
			statusGets++
		}
	}
	if want := n/pageKeys + 1; statusGets != want {
		t.Errorf("%d status reads, want %d", statusGets, want)
	}
}

func TestFleetRowsEtcdError(t *testing.T) {
	kv := newFakeKV()
	kv.err = errors.New("etcdserver: request timed out")
	if _, err := Rows(t.Context(), kv, "/f", Selector{}); err == nil || !strings.Contains(err.Error(), "request timed out") {
		t.Fatalf("Rows: %v, want the etcd error", err)
	}
}
