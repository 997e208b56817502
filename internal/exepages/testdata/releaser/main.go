// Command releaser calls exepages.Release in a process of its own and
// prints the file-backed resident set before and after, in kB, and the
// bytes advised: "before after advised".
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hostlet/hostlet/internal/exepages"
)

func main() {
	before := residentFileKB()
	advised, err := exepages.Release()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	after := residentFileKB()
	fmt.Println(before, after, advised, strings.Repeat("ok", 2))
}

func residentFileKB() int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			return kb
		}
	}
	fmt.Fprintln(os.Stderr, "no RssFile in /proc/self/status")
	os.Exit(1)
	return 0
}
