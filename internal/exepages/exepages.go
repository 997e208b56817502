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
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Release drops the process's mapping of the read-only, private,
// file-backed mappings of its executable (code and read-only data) when
// the executable is statically linked (no dynamic section, no RELRO: no
// page of those mappings was ever written) and the mapping holds no
// private copy of a page, in memory or swapped out (a debugger's
// breakpoint). The pages stay in the page cache; those used again are
// mapped again on first use, a page and its fault-around neighbours at a
// time, never a whole huge page (a binary just written sits in the page
// cache in folios of up to 2 MiB, which the kernel would otherwise map
// whole: one touch, 2 MiB resident). A uprobe or breakpoint set between
// the reading of the mappings and the advice is lost. It returns the
// bytes of address space advised.
func Release() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, fmt.Errorf("finding the executable: %w", err)
	}
	if err := staticallyLinked("/proc/self/exe"); err != nil {
		return 0, err
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("reading the process's mappings: %w", err)
	}
	var advised int64
	for _, m := range cleanReadOnlyMappings(smaps, exe) {
		if err := advise(m, unix.MADV_NOHUGEPAGE); err != nil && !errors.Is(err, unix.EINVAL) {
			// EINVAL: a kernel without huge pages maps none.
			return advised, fmt.Errorf("advising %x-%x of %s: %w", m.start, m.end, exe, err)
		}
		if err := advise(m, unix.MADV_DONTNEED); err != nil {
			return advised, fmt.Errorf("releasing %x-%x of %s: %w", m.start, m.end, exe, err)
		}
		advised += int64(m.end - m.start)
	}
	return advised, nil
}

// advise is madvise(2) of the range m.
func advise(m mapping, advice uintptr) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, advice); errno != 0 {
		return errno
	}
	return nil
}

// staticallyLinked returns an error unless the ELF file at path has no
// dynamic section and no RELRO segment: a dynamic loader writes
// relocations into pages of a read-only mapping before protecting it, and
// dropping such a page would bring back the file's bytes.
func staticallyLinked(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading the executable's headers: %w", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_DYNAMIC || p.Type == elf.PT_GNU_RELRO || p.Type == elf.PT_INTERP {
			return fmt.Errorf("the executable is dynamically linked (%s): its read-only pages may hold relocations", p.Type)
		}
	}
	return nil
}

// mapping is an address range [start, end).
type mapping struct{ start, end uintptr }

// cleanReadOnlyMappings are the mappings listed in smaps (the format of
// /proc/PID/smaps) that map path read-only and private (r-xp, r--p) and
// hold no private page (holdsPrivatePages).
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
		if candidate && holdsPrivatePages(line) {
			out, candidate = out[:len(out)-1], false
		}
	}
	return out
}

// holdsPrivatePages reports whether line, a line of a mapping's block in
// smaps, counts private pages of the mapping: anonymous ones in memory
// (Anonymous) or swapped out (Swap). Dropping either would lose it.
func holdsPrivatePages(line string) bool {
	for _, field := range []string{"Anonymous:", "Swap:"} {
		if kb, ok := strings.CutPrefix(line, field); ok {
			return strings.TrimSpace(kb) != "0 kB"
		}
	}
	return false
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
