package runtime_test

// The network and volume code driven against a small emulation of the
// Docker API (httptest), so no engine is needed (moved from sync's tests
// of the second outside review). The emulation resolves a network
// reference as dockerd's FindNetwork does: full ID, then exact name, then
// a unique ID prefix.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	gosync "sync"
	"testing"
	"time"

	hruntime "github.com/hostlet/hostlet/runtime"
)

type emuNetwork struct {
	ID       string            `json:"Id"`
	Name     string            `json:"Name"`
	Driver   string            `json:"Driver"`
	Internal bool              `json:"Internal"`
	Labels   map[string]string `json:"Labels"`
}

type emuVolume struct {
	Name   string            `json:"Name"`
	Driver string            `json:"Driver"`
	Labels map[string]string `json:"Labels"`
}

type emuEngine struct {
	mu       gosync.Mutex
	networks []*emuNetwork
	volumes  map[string]*emuVolume
	removed  []string // network IDs removed
	nextID   int
}

var emuAPIPrefix = regexp.MustCompile(`^/v[0-9.]+`)

func (e *emuEngine) findNetwork(term string) *emuNetwork {
	var byName, byPrefix []*emuNetwork
	for _, n := range e.networks {
		if n.ID == term {
			return n
		}
		if n.Name == term {
			byName = append(byName, n)
		}
		if strings.HasPrefix(n.ID, term) {
			byPrefix = append(byPrefix, n)
		}
	}
	if len(byName) == 1 {
		return byName[0]
	}
	if len(byName) == 0 && len(byPrefix) == 1 {
		return byPrefix[0]
	}
	return nil
}

func (e *emuEngine) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	path := emuAPIPrefix.ReplaceAllString(r.URL.Path, "")
	w.Header().Set("Api-Version", "1.41")
	notFound := func(what string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"message":"%s not found"}`, what)
	}
	switch {
	case path == "/_ping":
		fmt.Fprint(w, "OK")
	case path == "/version":
		fmt.Fprint(w, `{"Version":"20.10.24","ApiVersion":"1.41","Components":[{"Name":"Engine","Version":"20.10.24"}]}`)
	case path == "/info":
		fmt.Fprint(w, `{"Driver":"overlay2","CgroupDriver":"cgroupfs"}`)
	case path == "/networks/create" && r.Method == http.MethodPost:
		var req struct {
			Name     string
			Driver   string
			Internal bool
			Labels   map[string]string
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		for _, n := range e.networks {
			if n.Name == req.Name {
				w.WriteHeader(http.StatusConflict)
				fmt.Fprintf(w, `{"message":"network with name %s already exists"}`, req.Name)
				return
			}
		}
		e.nextID++
		id := fmt.Sprintf("%064x", e.nextID+0xfeed0000)
		e.networks = append(e.networks, &emuNetwork{ID: id, Name: req.Name, Driver: req.Driver, Internal: req.Internal, Labels: req.Labels})
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"Id":%q}`, id)
	case strings.HasPrefix(path, "/networks/"):
		term := strings.TrimPrefix(path, "/networks/")
		n := e.findNetwork(term)
		if n == nil {
			notFound("network " + term)
			return
		}
		switch r.Method {
		case http.MethodGet:
			_ = json.NewEncoder(w).Encode(n)
		case http.MethodDelete:
			for i, x := range e.networks {
				if x == n {
					e.networks = append(e.networks[:i], e.networks[i+1:]...)
					break
				}
			}
			e.removed = append(e.removed, n.Name)
			w.WriteHeader(http.StatusNoContent)
		}
	case path == "/volumes/create" && r.Method == http.MethodPost:
		var req struct {
			Name   string
			Labels map[string]string
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		v, ok := e.volumes[req.Name]
		if !ok {
			v = &emuVolume{Name: req.Name, Driver: "local", Labels: req.Labels}
			e.volumes[req.Name] = v
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(v)
	case strings.HasPrefix(path, "/volumes/"):
		name := strings.TrimPrefix(path, "/volumes/")
		v, ok := e.volumes[name]
		if !ok {
			notFound("volume " + name)
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	default:
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprintf(w, `{"message":"emulator: %s %s"}`, r.Method, path)
	}
}

func newEmu(t *testing.T, instance string) (*emuEngine, *hruntime.Docker) {
	t.Helper()
	e := &emuEngine{volumes: map[string]*emuVolume{}}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, err := hruntime.New(ctx, "tcp://"+srv.Listener.Addr().String(), instance, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return e, d
}

func own(instance string) map[string]string {
	return map[string]string{hruntime.LabelManaged: "true", hruntime.LabelInstance: instance}
}

// TestRemoveNetworkNeverRemovesANetworkByIDPrefix (second outside review):
// RemoveNetwork(name) inspects name, which the engine also resolves as an
// ID prefix, and removes what it found by ID without checking that its
// name is name: a label or manifest naming "abc" (a network no longer
// there, or never made) removes this instance's network "prod_default"
// whose ID begins with abc, bypassing pruneNetworks' "still used by a
// desired pod" check (which is by name).
func TestRemoveNetworkNeverRemovesANetworkByIDPrefix(t *testing.T) {
	e, d := newEmu(t, "unit")
	e.networks = append(e.networks, &emuNetwork{ID: "abc1" + strings.Repeat("0", 60), Name: "prod_default", Driver: "bridge", Labels: own("unit")})
	if err := d.RemoveNetwork(t.Context(), "abc"); err != nil {
		t.Fatal(err)
	}
	if len(e.removed) > 0 {
		t.Errorf("RemoveNetwork(%q) removed network %v: a different network whose ID starts with the name", "abc", e.removed)
	}
}

// TestEnsureNetworkNeverTakesANetworkByIDPrefix (second outside review):
// EnsureNetwork of a hostlet network "abc" that does not exist yet finds
// this instance's prod_default by ID prefix and takes it for "abc":
// nothing is created, and the container (NetworkMode "abc") lands on
// prod_default.
func TestEnsureNetworkNeverTakesANetworkByIDPrefix(t *testing.T) {
	e, d := newEmu(t, "unit")
	e.networks = append(e.networks, &emuNetwork{ID: "abc1" + strings.Repeat("0", 60), Name: "prod_default", Driver: "bridge", Labels: own("unit")})
	if err := d.EnsureNetwork(t.Context(), hruntime.NetworkSpec{Name: "abc"}, nil); err != nil {
		t.Fatal(err)
	}
	if e.findNetwork("abc").Name != "abc" {
		t.Errorf(`EnsureNetwork("abc") created nothing: "abc" resolves to %q`, e.findNetwork("abc").Name)
	}
}

// TestEnsureNetworkRefusesAnIDPrefixOfTheHostNetwork (second outside
// review): the reserved-name check (bridge, host, none, default) is by
// name only: an external network named by an ID prefix of Docker's own
// "host" network passes validation and checkNetwork, and the container is
// created with NetworkMode "<that prefix>".
func TestEnsureNetworkRefusesAnIDPrefixOfTheHostNetwork(t *testing.T) {
	e, d := newEmu(t, "unit")
	e.networks = append(e.networks, &emuNetwork{ID: "9f86d081884c" + strings.Repeat("0", 52), Name: "host", Driver: "host"})
	err := d.EnsureNetwork(t.Context(), hruntime.NetworkSpec{Name: "9f86d081884c", External: true}, nil)
	if err == nil {
		t.Errorf(`external network "9f86d081884c" (Docker's "host" by ID prefix) accepted`)
	}
}

// TestEnsureNetworkKeepsAnInternalNetworkInternal (second outside review):
// an existing hostlet network is taken as it is: a pod that declares it
// internal (no outside connectivity) is put on a network that is not
// internal, without error. Turning internal on for an existing network
// recreates the pod (its hash changes) but the network stays routable.
func TestEnsureNetworkKeepsAnInternalNetworkInternal(t *testing.T) {
	e, d := newEmu(t, "unit")
	if err := d.EnsureNetwork(t.Context(), hruntime.NetworkSpec{Name: "db_net"}, nil); err != nil {
		t.Fatal(err)
	}
	err := d.EnsureNetwork(t.Context(), hruntime.NetworkSpec{Name: "db_net", Internal: true}, nil)
	if n := e.findNetwork("db_net"); err == nil && !n.Internal {
		t.Errorf("pod asked for internal network db_net; got a non-internal one and no error")
	}
}
