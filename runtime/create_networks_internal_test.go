package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
)

// createEngine is a fake engine answering what Create asks, as Docker
// or Podman of one API version would; it records the endpoints of the
// create request and of each connect.
type createEngine struct {
	api    string // the API version it reports
	podman bool

	mu       sync.Mutex
	created  map[string]*network.EndpointSettings // the create's EndpointsConfig
	mode     string                               // the create's network mode
	connects []string                             // the networks connected, in order
	joined   map[string]*network.EndpointSettings // each connect's endpoint, by network
}

func (e *createEngine) serve(w http.ResponseWriter, r *http.Request) {
	path := apiPrefix.ReplaceAllString(r.URL.Path, "")
	w.Header().Set("Api-Version", e.api)
	w.Header().Set("Content-Type", "application/json")
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case path == "/_ping":
		fmt.Fprint(w, "OK")
	case path == "/version" && e.podman:
		fmt.Fprintf(w, `{"Version":"5.8.6","ApiVersion":%q,"Components":[{"Name":"Podman Engine","Version":"5.8.6"}]}`, e.api)
	case path == "/version":
		fmt.Fprintf(w, `{"Version":"x","ApiVersion":%q,"Components":[{"Name":"Engine","Version":"x"}]}`, e.api)
	case path == "/info":
		// systemd: a Podman that runs its healthcheck timers itself.
		fmt.Fprint(w, `{"Driver":"overlay2","CgroupDriver":"systemd"}`)
	case path == "/containers/create" && r.Method == http.MethodPost:
		var req container.CreateRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.HostConfig == nil {
			http.Error(w, `{"message":"bad create request"}`, http.StatusBadRequest)
			return
		}
		if req.NetworkingConfig != nil {
			e.created = req.NetworkingConfig.EndpointsConfig
		}
		e.mode = string(req.HostConfig.NetworkMode)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"Id":"c1","Warnings":[]}`)
	case strings.HasPrefix(path, "/networks/") && strings.HasSuffix(path, "/connect") && r.Method == http.MethodPost:
		var req network.ConnectOptions
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Container != "c1" {
			http.Error(w, `{"message":"bad connect request"}`, http.StatusBadRequest)
			return
		}
		name := strings.TrimSuffix(strings.TrimPrefix(path, "/networks/"), "/connect")
		e.connects = append(e.connects, name)
		e.joined[name] = req.EndpointConfig
	case path == "/containers/c1/json":
		// What Create reads back on Podman (checkApplied).
		fmt.Fprint(w, `{"Id":"c1","Config":{},"HostConfig":{}}`)
	default:
		w.WriteHeader(http.StatusNotImplemented)
		fmt.Fprintf(w, `{"message":"not in the fake: %s %s"}`, r.Method, path)
	}
}

// newCreateEngine starts e and connects a Docker to it.
func newCreateEngine(t *testing.T, e *createEngine) *Docker {
	t.Helper()
	e.joined = map[string]*network.EndpointSettings{}
	srv := httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	d, err := New(ctx, "tcp://"+srv.Listener.Addr().String(), "fake", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// TestCreateJoinsNetworksAtCreateFromAPI144: from API 1.44 (Docker 25)
// a container is created on all its networks in the create request;
// before, and on Podman whatever version it reports, it is created on
// the first and connected to each other one. Either way it has the same
// endpoint on each network: its aliases and addresses.
func TestCreateJoinsNetworksAtCreateFromAPI144(t *testing.T) {
	front := NetworkSpec{Name: "shop_front", Aliases: []string{"web", "www"}}
	back := NetworkSpec{Name: "shop_back", Aliases: []string{"web-back"}, IPv4Address: "10.42.0.10", IPv6Address: "fd00:42::10"}
	proxy := NetworkSpec{Name: "proxy", External: true}
	three := []NetworkSpec{front, back, proxy}
	all := []string{"proxy", "shop_back", "shop_front"}
	tests := []struct {
		name     string
		api      string
		podman   bool
		nets     []NetworkSpec
		atCreate []string // the networks of the create request, sorted
		connects []string // the networks connected after it, in order
	}{
		{"Docker 20.10, API 1.41", "1.41", false, three, []string{"shop_front"}, []string{"shop_back", "proxy"}},
		{"Docker 24, API 1.43", "1.43", false, three, []string{"shop_front"}, []string{"shop_back", "proxy"}},
		{"Docker 25, API 1.44", "1.44", false, three, all, nil},
		{"Docker 28, API 1.51", "1.51", false, three, all, nil},
		{"an engine newer than the client, API 1.99", "1.99", false, three, all, nil},
		{"Podman, API 1.41", "1.41", true, three, []string{"shop_front"}, []string{"shop_back", "proxy"}},
		{"Podman, API 1.44", "1.44", true, three, []string{"shop_front"}, []string{"shop_back", "proxy"}},
		{"one network, API 1.41", "1.41", false, []NetworkSpec{back}, []string{"shop_back"}, nil},
		{"one network, API 1.44", "1.44", false, []NetworkSpec{back}, []string{"shop_back"}, nil},
		{"no network, API 1.44", "1.44", false, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &createEngine{api: tt.api, podman: tt.podman}
			d := newCreateEngine(t, e)
			spec := ContainerSpec{Name: "hostlet_shop_web", Image: "example.org/web:1", Networks: tt.nets}
			id, err := d.Create(t.Context(), spec)
			if err != nil || id != "c1" {
				t.Fatalf("Create: %q, %v", id, err)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if got := slices.Sorted(maps.Keys(e.created)); !slices.Equal(got, tt.atCreate) {
				t.Errorf("created on networks %v, want %v", got, tt.atCreate)
			}
			if !slices.Equal(e.connects, tt.connects) {
				t.Errorf("connected to %v after the create, want %v", e.connects, tt.connects)
			}
			if len(tt.nets) > 0 && e.mode != tt.nets[0].Name {
				t.Errorf("network mode %q, want the first network %q", e.mode, tt.nets[0].Name)
			}
			// Each network's endpoint, wherever it was given, is endpoint()'s.
			got := maps.Clone(e.created)
			maps.Copy(got, e.joined)
			for _, n := range tt.nets {
				if want := endpoint(n); !reflect.DeepEqual(got[n.Name], want) {
					t.Errorf("endpoint on %s = %+v, want %+v", n.Name, got[n.Name], want)
				}
			}
			if len(got) != len(tt.nets) {
				t.Errorf("endpoints on %v, want %d networks", slices.Sorted(maps.Keys(got)), len(tt.nets))
			}
		})
	}
}
