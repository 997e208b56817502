package sync

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest"
)

// An httpGet's headers are sent, a Host header naming the virtual host;
// the request still goes to the pod's address alone.
func TestHTTPGetSendsItsHeaders(t *testing.T) {
	var got http.Header
	var host string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, host = r.Header.Clone(), r.Host
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	g := manifest.HTTPGet{Path: "/ready", HTTPHeaders: []manifest.HTTPHeader{
		{Name: "Host", Value: "shop.example.org"}, {Name: "X-Probe", Value: "a"}, {Name: "x-probe", Value: "b"}}}
	if err := httpGet(t.Context(), addr, g); err != nil {
		t.Fatal(err)
	}
	if host != "shop.example.org" || strings.Join(got.Values("X-Probe"), ",") != "a,b" {
		t.Errorf("host %q, X-Probe %q; want shop.example.org and a,b", host, got.Values("X-Probe"))
	}
}
