// Package helperexec finds the helper programs hostlet runs beside itself
// (hostlet-compose, hostlet-notify, hostlet-sops): the one a config names,
// else the one beside the running executable, else the one on PATH.
package helperexec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
