// Package exepages lets a long-running process give back its mapping of
// the pages of its own executable that it touched once while starting.
//
// The init functions of a large Go binary touch code and read-only data
// all over the file, and the kernel maps each fault's neighbours too
// (fault-around), so a process that has just started has most of its
// executable mapped although it will use a fraction of it again. Those
// pages are clean and the page cache can hand them out again, but they
// count in the process's resident set.
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
// breakpoint). Then, unless the executable is on a network or FUSE
// filesystem, it drops the executable's pages that no process maps from
// the page cache: a binary just written sits there in folios of up to
// 2 MiB, and the kernel maps a large folio whole when one of its pages
// is touched, so one touch would make up to 2 MiB resident again. The
// pages used again are read back and mapped on first use, a readahead
// window and its fault-around neighbours at a time (MADV_NOHUGEPAGE: never
// a huge page). Pages mapped while Release runs (its own code, the
// runtime's) stay cached as they were. A uprobe or breakpoint set between
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
	if err := dropUnmappedPages("/proc/self/exe"); err != nil {
		return advised, fmt.Errorf("dropping the unmapped pages of %s from the page cache: %w", exe, err)
	}
	return advised, nil
}

// errRemoteFilesystem: the executable's pages are left in the page cache.
var errRemoteFilesystem = errors.New("the executable is on a network or FUSE filesystem: its pages stay in the page cache")

// dropUnmappedPages drops from the page cache the pages of the file at
// path that no process maps (posix_fadvise DONTNEED), unless the file is
// on a network or FUSE filesystem: the agent's code would then be read
// back from a server or a daemon, and hang or fault while it is away. A
// page not yet written back would stay, so it first writes back and waits
// for the file's dirty pages: a binary copied in the last half minute and
// not synced (a package manager syncs; the kernel's flusher would write
// them within half a minute anyway).
func dropUnmappedPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var fs unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &fs); err != nil {
		return fmt.Errorf("finding the filesystem: %w", err)
	}
	if remoteFilesystem(int64(fs.Type)) {
		return errRemoteFilesystem
	}
	const writeAndWait = unix.SYNC_FILE_RANGE_WAIT_BEFORE | unix.SYNC_FILE_RANGE_WRITE | unix.SYNC_FILE_RANGE_WAIT_AFTER
	if err := unix.SyncFileRange(int(f.Fd()), 0, 0, writeAndWait); err != nil {
		return fmt.Errorf("writing back: %w", err)
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
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

// remoteFilesystem reports whether statfs's f_type is that of a network
// or FUSE filesystem.
func remoteFilesystem(fsType int64) bool {
	switch fsType {
	case unix.NFS_SUPER_MAGIC, unix.SMB_SUPER_MAGIC, unix.SMB2_SUPER_MAGIC, unix.CIFS_SUPER_MAGIC,
		unix.FUSE_SUPER_MAGIC, unix.V9FS_MAGIC, unix.CEPH_SUPER_MAGIC, unix.AFS_FS_MAGIC,
		unix.AFS_SUPER_MAGIC, unix.CODA_SUPER_MAGIC:
		return true
	}
	return false
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
