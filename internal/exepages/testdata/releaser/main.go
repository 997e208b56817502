// Command releaser calls exepages.Release in a process of its own and
// prints the file-backed resident set before and after, in kB, the
// bytes advised, and the pages of its executable in the page cache before
// and after: "before after advised cachedBefore cachedAfter".
package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hostlet/hostlet/internal/exepages"
	"golang.org/x/sys/unix"
)

func main() {
	before, cachedBefore := residentFileKB(), cachedPages()
	advised, err := exepages.Release()
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	after, cachedAfter := residentFileKB(), cachedPages()
	fmt.Println(before, after, advised, cachedBefore, cachedAfter, strings.Repeat("ok", 2))
}

// cachedPages counts the pages of the executable in the page cache
// (mincore of a mapping of the whole file that touches none of them).
func cachedPages() int {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		fail(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		fail(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(info.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		fail(err)
	}
	defer unix.Munmap(data)
	vec := make([]byte, (len(data)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		fail(errno)
	}
	cached := 0
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// residentFileKB is the process's resident set of file pages: RssFile,
// and RssShmem for an executable on tmpfs.
func residentFileKB() int {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fail(err)
	}
	kb, found := 0, 0
	for line := range strings.Lines(string(status)) {
		for _, field := range []string{"RssFile:", "RssShmem:"} {
			if v, ok := strings.CutPrefix(line, field); ok {
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
				if err != nil {
					fail(err)
				}
				kb += n
				found++
			}
		}
	}
	if found != 2 {
		fail(errors.New("no RssFile and RssShmem in /proc/self/status"))
	}
	return kb
}
