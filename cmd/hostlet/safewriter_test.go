package main

import (
	"strings"
	"testing"
)

func TestTerminalSafe(t *testing.T) {
	var b strings.Builder
	n, err := terminalSafe(&b).Write([]byte("host \x1b]0;pwned\a\x1b[2Jweb\u009b1m\tok\n"))
	if err != nil || n != len("host \x1b]0;pwned\a\x1b[2Jweb\u009b1m\tok\n") {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if got, want := b.String(), "host ?]0;pwned??[2Jweb?1m\tok\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
