package sync

// Attacks on the host-access settings, inside the syncer (outside
// review). A failing test is a finding.

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/hostlet/hostlet/manifest"
	hruntime "github.com/hostlet/hostlet/runtime"
)

// A container on the host's network has no address of its own: Docker
// lists it on the "host" network with an empty IPAddress, so the prober's
// target has ip "" and every tcpSocket/httpGet check fails ("the pod has
// no IP address to probe"), although the service answers on the host.
// The container is restarted every failureThreshold periods, forever;
// validation accepts the pod.
func TestAttackPolicyHostNetworkProbeRestartLoop(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	m := manifest.Manifest{Version: manifest.Version, ID: "web", HostNetwork: true, Containers: []manifest.Container{{
		Name: "app", Image: "example.org/app:1",
		Ports: []manifest.Port{{ContainerPort: port}},
		LivenessProbe: &manifest.Probe{Type: manifest.ProbeTCP, TCPSocket: &manifest.TCPSocket{Port: strconv.Itoa(port)},
			PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 1},
	}}}
	pod := NewPod(m, "test", "rev1")
	running := hruntime.Container{ID: "c1", State: hruntime.StateRunning, IP: "", Labels: map[string]string{
		hruntime.LabelPod: "web", hruntime.LabelContainer: "app", hruntime.LabelHash: manifest.ContainerHash(pod.Manifest, 0)}}

	restarted := make(chan string, 1)
	p := newProber(nil, slog.New(slog.DiscardHandler), func(_ context.Context, _, _, _, why string, _ time.Duration) {
		select {
		case restarted <- why:
		default:
		}
	}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	defer func() { cancel(); p.stopAll() }()
	p.update(ctx, []Pod{pod}, []hruntime.Container{running})
	select {
	case why := <-restarted:
		t.Errorf("the hostNetwork pod's container is restarted by its liveness probe although it listens on the host (127.0.0.1:%d): %s", port, why)
	case <-time.After(1500 * time.Millisecond):
	}
}
