// Command cadvisord is a cAdvisor daemon for hostlet's integration tests
// (internal/cadvisor): cAdvisor's own manager, the collector the cadvisor
// daemon runs (github.com/google/cadvisor/lib/manager, with the Docker
// plugin of github.com/google/cadvisor), behind the daemon's REST API
// endpoints that hostlet reads, v1.0 to v1.3 machine, containers and
// docker, answering as the daemon's handlers (cmd/internal/api in the
// cAdvisor repository) do: JSON on success, the error's text with status
// 500 on failure. It collects with the daemon's default metric set.
//
// It exists because the daemon itself cannot be built from a module: its
// main package is in the module github.com/google/cadvisor/cmd, whose
// go.mod replaces github.com/google/cadvisor with "../" (it is built from
// a clone, with the Makefile), so `go install
// github.com/google/cadvisor/cmd@VERSION` refuses it (and the module proxy
// serves no version of it); the root and lib modules hold the manager but
// no main package and no API handlers.
//
//	cadvisord -listen_ip 127.0.0.1 -port 0
//
// prints "cadvisord: listening on http://ADDR" once it serves. It needs
// root (it reads /sys/fs/cgroup and the Docker socket). SIGTERM or
// SIGINT stop it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	info "github.com/google/cadvisor/info/v1"
	"github.com/google/cadvisor/lib/cache/memory"
	"github.com/google/cadvisor/lib/container"
	"github.com/google/cadvisor/lib/manager"
	"github.com/google/cadvisor/lib/utils/sysfs"

	// The Docker and Podman container plugins, as the daemon registers
	// them.
	_ "github.com/google/cadvisor/container/docker/install"
	_ "github.com/google/cadvisor/container/podman/install"
)

// ignoreMetrics is the daemon's default --disable_metrics.
var ignoreMetrics = container.MetricSet{
	container.MemoryNumaMetrics:              struct{}{},
	container.NetworkTcpUsageMetrics:         struct{}{},
	container.NetworkUdpUsageMetrics:         struct{}{},
	container.NetworkAdvancedTcpUsageMetrics: struct{}{},
	container.ProcessSchedulerMetrics:        struct{}{},
	container.ProcessMetrics:                 struct{}{},
	container.HugetlbUsageMetrics:            struct{}{},
	container.ReferencedMemoryMetrics:        struct{}{},
	container.CPUTopologyMetrics:             struct{}{},
	container.ResctrlMetrics:                 struct{}{},
	container.CPUSetMetrics:                  struct{}{},
}

func main() {
	listenIP := flag.String("listen_ip", "127.0.0.1", "IP to listen on")
	port := flag.Int("port", 8080, "port to listen on (0: any free port)")
	flag.Var(&ignoreMetrics, "disable_metrics", "comma-separated list of metrics to be disabled")
	flag.Parse()
	if err := run(net.JoinHostPort(*listenIP, strconv.Itoa(*port))); err != nil {
		fmt.Fprintln(os.Stderr, "cadvisord:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	// []string{""}: the daemon's default --raw_cgroup_prefix_whitelist
	// ("" split on commas), every cgroup collected (a Podman container's
	// among them, found by its cgroup path).
	m, err := manager.New(memory.New(2*time.Minute, nil), sysfs.NewRealSysFs(), manager.HousekeepingConfigFlags,
		container.AllMetrics.Difference(ignoreMetrics), []string{""}, nil, "", 0)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := m.Start(); err != nil {
		return fmt.Errorf("start manager: %w", err)
	}
	defer m.Stop()

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		res, err := handle(m, r)
		if err == nil {
			var out []byte
			if out, err = json.Marshal(res); err == nil {
				w.Header().Set("Content-Type", "application/json")
				w.Write(out)
				return
			}
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-stop
		srv.Close()
	}()
	fmt.Printf("cadvisord: listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// handle answers /api/<version>/<type>/<args> for the versions v1.0 to
// v1.3 and the types machine, containers and docker.
func handle(m manager.Manager, r *http.Request) (any, error) {
	version, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/api/"), "/")
	switch version {
	case "v1.0", "v1.1", "v1.2", "v1.3":
	default:
		return nil, fmt.Errorf("unsupported API version %q", version)
	}
	kind, args, _ := strings.Cut(rest, "/")
	switch kind {
	case "machine":
		return m.GetMachineInfo()
	case "containers":
		query, err := containerInfoRequest(r.Body)
		if err != nil {
			return nil, err
		}
		name := path.Join("/", args)
		c, err := m.GetContainerInfo(name, query)
		if err != nil {
			return nil, fmt.Errorf("failed to get container %q with error: %s", name, err)
		}
		return c, nil
	case "docker":
		query, err := containerInfoRequest(r.Body)
		if err != nil {
			return nil, err
		}
		if args = strings.Trim(args, "/"); args == "" {
			all, err := m.AllDockerContainers(query)
			if err != nil {
				return nil, fmt.Errorf("failed to get all Docker containers with error: %v", err)
			}
			return all, nil
		}
		c, err := m.DockerContainer(args, query)
		if err != nil {
			return nil, fmt.Errorf("failed to get Docker container %q with error: %v", args, err)
		}
		return map[string]info.ContainerInfo{c.Name: c}, nil
	default:
		return nil, fmt.Errorf("unknown request type %q", kind)
	}
}

// containerInfoRequest reads the query in the request body as the daemon
// does: 60 samples when the body is empty.
func containerInfoRequest(body io.Reader) (*info.ContainerInfoRequest, error) {
	q := info.DefaultContainerInfoRequest()
	if err := json.NewDecoder(body).Decode(&q); err != nil && err != io.EOF {
		return nil, fmt.Errorf("unable to decode the json value: %s", err)
	}
	return &q, nil
}
