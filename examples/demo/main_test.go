package main

import (
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/internal/testkit"
)

func TestHandlers(t *testing.T) {
	dir := t.TempDir()
	s := newServer(slog.New(slog.DiscardHandler))
	s.unhealthyFile = filepath.Join(dir, "unhealthy")
	srv := httptest.NewServer(s.routes())
	defer srv.Close()
	t.Setenv("MESSAGE", "hi there")

	do := func(method, path, body string) (int, string) {
		t.Helper()
		code, b, err := testkit.HTTP(method, srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		return code, b
	}
	host, _ := os.Hostname()
	file := filepath.Join(dir, "f")
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/", "", 200, "hello from " + host + ", MESSAGE=hi there\n"},
		{"GET", "/nope", "", 404, ""},
		{"POST", "/", "", 405, ""},
		{"GET", "/env?name=MESSAGE", "", 200, "hi there"},
		{"GET", "/env?name=HOSTLET_DEMO_UNSET", "", 404, ""},
		{"GET", "/healthz", "", 200, "ok\n"},
		{"POST", "/unhealthy", "", 200, "now unhealthy\n"},
		{"GET", "/healthz", "", 500, ""},
		{"GET", "/read?path=" + file, "", 404, ""},
		{"POST", "/write?path=" + file, "data", 200, "wrote 4 bytes\n"},
		{"GET", "/read?path=" + file, "", 200, "data"},
		{"GET", "/fetch?url=" + srv.URL + "/env?name=MESSAGE", "", 200, "hi there"},
		{"POST", "/alloc?mb=2", "", 200, "holding 2 MiB\n"},
		{"POST", "/alloc?mb=1", "", 200, "holding 3 MiB\n"},
		{"POST", "/alloc?mb=x", "", 400, ""},
		{"POST", "/exit?code=x", "", 400, ""},
	} {
		code, body := do(tc.method, tc.path, tc.body)
		if code != tc.code || (tc.want != "" && body != tc.want) {
			t.Errorf("%s %s = %d %q, want %d %q", tc.method, tc.path, code, body, tc.code, tc.want)
		}
	}
}
