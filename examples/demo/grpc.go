package main

import (
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// grpcHealthServer answers the gRPC health checking protocol
// (grpc.health.v1.Health/Check) on addr, over HTTP/2 without TLS, with
// the standard library alone: SERVING for the server ("") and any
// service, NOT_SERVING once s's unhealthy file exists, and NOT_FOUND for
// the service "unknown".
func grpcHealthServer(addr string, s *server) *http.Server {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{Addr: addr, Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.grpcHealth(w, r) })}
}

// The health protocol's statuses and the gRPC status codes answered.
const (
	healthServing    = 1
	healthNotServing = 2
	grpcNotFound     = "5"
	grpcUnimplement  = "12"
)

func (s *server) grpcHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/grpc")
	if r.URL.Path != "/grpc.health.v1.Health/Check" {
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", grpcUnimplement)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
	service, ok := healthService(body)
	if !ok || service == "unknown" {
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", grpcNotFound)
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", "unknown service "+strconv.Quote(service))
		return
	}
	status := byte(healthServing)
	if _, err := os.Stat(s.unhealthyFile); err == nil {
		status = healthNotServing
	}
	// One uncompressed message of 2 bytes: field 1 (status), varint.
	_, _ = w.Write([]byte{0, 0, 0, 0, 2, 0x08, status})
	w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
}

// healthService reads the service of a HealthCheckRequest from a gRPC
// frame (a flag byte, a 4-byte length, the message): field 1, a string.
func healthService(frame []byte) (string, bool) {
	if len(frame) < 5 || frame[0] != 0 {
		return "", false
	}
	msg := frame[5:]
	if len(msg) == 0 {
		return "", true
	}
	if msg[0] != 0x0a {
		return "", false
	}
	n, i := 0, 1
	for shift := 0; i < len(msg) && shift < 28; shift += 7 {
		b := msg[i]
		i++
		n |= int(b&0x7f) << shift
		if b < 0x80 {
			break
		}
	}
	if n < 0 || i+n > len(msg) {
		return "", false
	}
	return string(msg[i : i+n]), true
}
