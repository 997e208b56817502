// Package exepages lets a long-running process give back its mapping of
// the pages of its own executable that it touched once while starting.
//
// The init functions of a large Go binary touch code and read-only data
// all over the file, and the kernel maps each fault's neighbours too
// (fault-around), so a process that has just started has most of its
// executable mapped although it will use a fraction of it again. Those
// pages are clean and stay in the page cache, where the kernel can take
// them back, but they count in the process's resident set.
package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Release drops the process's mapping of the read-only, private,
// file-backed mappings of its executable (code and read-only data) that
// hold no private copy of a page. The pages stay in the page cache; those
// used again are mapped again on first use, a page and its fault-around
// neighbours at a time, never a whole huge page (a binary just written
// sits in the page cache in folios of up to 2 MiB, which the kernel would
// otherwise map whole: one touch, 2 MiB resident). A mapping with a private copy
// (a relocated read-only segment of a dynamically linked binary, a
// debugger's breakpoint) is left alone: dropping it would lose the copy.
// It returns the bytes of address space advised.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("reading the process's mappings: %w", err)
	}
	var advised int64
	for _, m := range cleanReadOnlyMappings(smaps, exe) {
		for _, advice := range []uintptr{unix.MADV_NOHUGEPAGE, unix.MADV_DONTNEED} {
			_, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, advice)
			if errno != 0 {
				return advised, fmt.Errorf("advising %x-%x of %s (%d): %w", m.start, m.end, exe, advice, errno)
			}
		}
		advised += int64(m.end - m.start)
	}
	return advised, nil
}

// mapping is an address range [start, end).
type mapping struct{ start, end uintptr }

// cleanReadOnlyMappings are the mappings listed in smaps (the format of
// /proc/PID/smaps) that map path read-only and private (r-xp, r--p) and
// count no anonymous page.
func cleanReadOnlyMappings(smaps []byte, path string) []mapping {
	var out []mapping
	candidate := false // the last mapping read is in out, pending its Anonymous line
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		if m, perms, file, ok := mappingHeader(line); ok {
			candidate = file == path && (perms == "r-xp" || perms == "r--p")
			if candidate {
				out = append(out, m)
			}
			continue
		}
		if candidate {
			if kb, ok := strings.CutPrefix(line, "Anonymous:"); ok && strings.TrimSpace(kb) != "0 kB" {
				out, candidate = out[:len(out)-1], false
			}
		}
	}
	return out
}

// mappingHeader parses the first line of a mapping in smaps:
// "start-end perms offset dev inode [path]".
func mappingHeader(line string) (m mapping, perms, path string, ok bool) {
	fields := strings.SplitN(line, " ", 6)
	if len(fields) < 5 {
		return mapping{}, "", "", false
	}
	lo, hi, found := strings.Cut(fields[0], "-")
	if !found {
		return mapping{}, "", "", false
	}
	start, err := strconv.ParseUint(lo, 16, strconv.IntSize)
	if err != nil {
		return mapping{}, "", "", false
	}
	end, err := strconv.ParseUint(hi, 16, strconv.IntSize)
	if err != nil || end <= start {
		return mapping{}, "", "", false
	}
	if len(fields) == 6 {
		path = strings.TrimLeft(fields[5], " ")
	}
	return mapping{uintptr(start), uintptr(end)}, fields[1], path, true
}
