// Package helperexec finds the helper programs hostlet runs beside itself
// (hostlet-compose, hostlet-notify, hostlet-sops): the one a config names,
// else the one beside the running executable, else the one on PATH.
package helperexec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// NotFoundError is Find's error: the helper is nowhere it looked.
type NotFoundError struct {
	Name string
	// Tried says where it looked ("beside /usr/bin/hostlet", "on PATH").
	Tried []string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s not found (looked %v)", e.Name, e.Tried)
}

// Find returns the path of the helper name: explicit when set, else the
// file name beside the running executable (its symlinks resolved), else
// name on PATH. The error says where it looked.
func Find(name, explicit string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
		tried = append(tried, "beside "+exe)
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	tried = append(tried, "on PATH")
	return "", &NotFoundError{Name: name, Tried: tried}
}

// FindTrusted returns the path of the helper name for a helper that is
// handed secrets: explicit when set, else the file beside the running
// executable, never one on PATH; and only a file that root or hostlet's
// user owns, that no one else may write, in a folder no one else may
// write.
func FindTrusted(name, explicit string) (string, error) {
	p := explicit
	if p == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("%s: the running executable: %w", name, err)
		}
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		p = filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err != nil {
			return "", &NotFoundError{Name: name, Tried: []string{"beside " + exe}}
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, p, err)
	}
	for _, f := range []string{real, filepath.Dir(real)} {
		if err := ownedAndClosed(f); err != nil {
			return "", fmt.Errorf("%s %s: %w", name, p, err)
		}
	}
	return real, nil
}

// ownedAndClosed refuses a file or folder another user than root or
// hostlet's owns, or that its group or others may write (a folder with
// the sticky bit aside, whose files only their owners replace).
func ownedAndClosed(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is owned by uid %d, not root or hostlet's user", path, st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 && !(fi.IsDir() && fi.Mode()&os.ModeSticky != 0) {
		return fmt.Errorf("%s has mode %04o: others may replace it", path, fi.Mode().Perm())
	}
	return nil
}

// Buffer takes a helper's output: at most Max bytes, noting that more
// came (Over). With Stop, a write past Max fails (an answer: the pipe
// closes and the helper, writing on, ends on SIGPIPE instead of running
// to its timeout); without, the rest is dropped (its messages, which it
// may write on). Its bytes.Buffer is a field, not embedded: io.Copy would
// take its ReadFrom, past the bound.
type Buffer struct {
	buf  bytes.Buffer
	Max  int
	Stop bool
	Over bool
}

// ErrOver ends the copy of an answer past its bound.
var ErrOver = errors.New("over its bound")

func (b *Buffer) Write(p []byte) (int, error) {
	if room := b.Max - b.buf.Len(); len(p) > room {
		b.Over = true
		b.buf.Write(p[:max(room, 0)])
		if b.Stop {
			return max(room, 0), ErrOver
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Bytes are the bytes kept.
func (b *Buffer) Bytes() []byte { return b.buf.Bytes() }

// Len is how many bytes are kept.
func (b *Buffer) Len() int { return b.buf.Len() }
