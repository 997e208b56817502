package sync

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A gRPC probe asks the health service of a real gRPC server: SERVING is
// healthy; NOT_SERVING, an unknown service and no server are not.
func TestGRPCProbeAsksTheHealthService(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	hs.SetServingStatus("shop.Orders", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("shop.Stock", healthpb.HealthCheckResponse_NOT_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()

	tests := []struct {
		addr, service, want string
	}{
		{ln.Addr().String(), "", ""},
		{ln.Addr().String(), "shop.Orders", ""},
		{ln.Addr().String(), "shop.Stock", `service "shop.Stock" is NOT_SERVING`},
		{ln.Addr().String(), "shop.Gone", "unknown service"},
		{closed.Addr().String(), "", "grpc " + closed.Addr().String()},
	}
	for _, tt := range tests {
		err := grpcHealth(t.Context(), tt.addr, tt.service)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s %q: %v, want healthy", tt.addr, tt.service, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s %q: %v, want an error holding %q", tt.addr, tt.service, err, tt.want)
		}
	}
}

// hugeHealth answers every check with an error of a megabyte.
type hugeHealth struct {
	healthpb.UnimplementedHealthServer
}

func (hugeHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(codes.Unavailable, strings.Repeat("x", 1<<20))
}

// What a pod answers a gRPC probe with is bounded in the probe's error
// (which reaches logs, events and the status).
func TestGRPCProbeErrorIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hugeHealth{})
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	err = grpcHealth(t.Context(), ln.Addr().String(), "")
	if err == nil || len(err.Error()) > 512 {
		t.Errorf("error of %d bytes, want one of at most 512", len(fmt.Sprint(err)))
	}
}
