package cadvisor

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/hostlet/hostlet/internal/textcap"
)

// rawServer answers every connection with resp once it has read the
// request's head: whatever a wrong service, a reused port or a hostile
// proxy on the configured address may say.
func rawServer(t *testing.T, resp string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					l, err := br.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				_, _ = c.Write([]byte(resp))
			}()
		}
	}()
	return ln.Addr().String()
}

// Every error a cAdvisor's answer causes is bounded (textcap.DetailBytes)
// and shows no credential, whatever the answer's status line or body.
func TestErrorsBounded(t *testing.T) {
	big := strings.Repeat("A", 2<<20)
	tests := []struct{ name, resp string }{
		{"huge status line", "HTTP/1.1 500 " + big + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"},
		{"malformed answer", "GARBAGE " + big + "\r\n\r\n"},
		{"huge header", "HTTP/1.1 200 OK\r\nX-Big: " + big + "\r\nContent-Length: 2\r\n\r\n{}"},
		{"huge error body", "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 300\r\nConnection: close\r\n\r\n" + strings.Repeat("é", 150)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := rawServer(t, tc.resp)
			r := New("http://user:s3cretpw@" + addr)
			_, err := r.Machine(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if len(msg) > textcap.DetailBytes {
				t.Errorf("error of %d bytes, want at most %d: %.200s", len(msg), textcap.DetailBytes, msg)
			}
			if strings.Contains(msg, "s3cretpw") {
				t.Errorf("error shows the password: %s", msg)
			}
			if !strings.HasPrefix(msg, "cadvisor http://") {
				t.Errorf("error %q does not name the cAdvisor", msg)
			}
			if msg != strings.ToValidUTF8(msg, "") {
				t.Errorf("error is cut inside a character: %q", msg)
			}
		})
	}
}
