package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a child process started in its own process group, so stopping it
// (and whatever it started, e.g. the compose loop's docker-compose) never
// touches anything else.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// procs are the children still running; cleanup stops them all.
var procs = struct {
	sync.Mutex
	m map[*proc]bool
}{m: map[*proc]bool{}}

func startProc(name, dir, logPath string, env []string, argv ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	procs.Lock()
	procs.m[p] = true
	procs.Unlock()
	go func() {
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	defer func() {
		procs.Lock()
		delete(procs.m, p)
		procs.Unlock()
	}()
	if p.exited() {
		return
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
	<-p.done
}

// tail returns the last lines of the process's log.
func (p *proc) tail(lines int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	ls := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

func stopAllProcs() {
	procs.Lock()
	var all []*proc
	for p := range procs.m {
		all = append(all, p)
	}
	procs.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop(10 * time.Second)
		}()
	}
	wg.Wait()
}

// usage is what /proc says about a process.
type usage struct {
	// CPUSeconds is utime+stime.
	CPUSeconds float64 `json:"cpuSeconds"`
	// RSSBytes is VmRSS, HWMBytes VmHWM (peak RSS).
	RSSBytes int64 `json:"rssBytes"`
	HWMBytes int64 `json:"hwmBytes"`
	// RssAnon (heap, stacks) and RssFile (the mapped binary) split
	// RSSBytes.
	RSSAnonBytes int64 `json:"rssAnonBytes"`
	RSSFileBytes int64 `json:"rssFileBytes"`
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func readUsage(pid int) (usage, error) {
	var u usage
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// Fields after the command (which may hold spaces) in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, errors.New("short /proc stat")
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return u, err
	}
	u.CPUSeconds = (ut + st) / clockTicks
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &u.RSSBytes
		case "VmHWM":
			dst = &u.HWMBytes
		case "RssAnon":
			dst = &u.RSSAnonBytes
		case "RssFile":
			dst = &u.RSSFileBytes
		default:
			continue
		}
		fs := strings.Fields(v)
		if len(fs) == 2 && fs[1] == "kB" {
			n, err := strconv.ParseInt(fs[0], 10, 64)
			if err == nil {
				*dst = n * 1024
			}
		}
	}
	return u, nil
}

// clearRefs resets the referenced bits of every page of pid (writes 1 to
// /proc/<pid>/clear_refs); referencedBytes then tells how much of its
// resident memory it touched since. Neither changes RSS.
func clearRefs(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("1"), 0)
}

// referencedBytes reads Referenced from /proc/<pid>/smaps_rollup.
func referencedBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Referenced:"); ok {
			fs := strings.Fields(v)
			if len(fs) == 2 && fs[1] == "kB" {
				n, err := strconv.ParseInt(fs[0], 10, 64)
				return n * 1024, err
			}
		}
	}
	return 0, errors.New("no Referenced in smaps_rollup")
}

// loadAvg returns /proc/loadavg's first three fields.
func loadAvg() ([3]float64, error) {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l, err
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return l, errors.New("malformed /proc/loadavg")
	}
	for i := range l {
		if l[i], err = strconv.ParseFloat(f[i], 64); err != nil {
			return l, err
		}
	}
	return l, nil
}

// waitQuiet polls the 1-minute load average every 30 s until it has stayed
// below limit for the whole of span, or max has passed. It reports whether
// the machine got quiet and the samples it saw.
func waitQuiet(ctx context.Context, limit float64, span, max time.Duration) (bool, []float64, error) {
	const every = 30 * time.Second
	need := int(span/every) + 1 // samples at 0, 30, ..., span
	var (
		samples []float64
		run     int
	)
	deadline := time.Now().Add(max)
	for {
		l, err := loadAvg()
		if err != nil {
			return false, samples, err
		}
		samples = append(samples, l[0])
		if l[0] < limit {
			run++
		} else {
			run = 0
		}
		logf("quiet wait: load %.2f %.2f %.2f (%d/%d quiet samples)", l[0], l[1], l[2], run, need)
		if run >= need {
			return true, samples, nil
		}
		if time.Now().Add(every).After(deadline) {
			return false, samples, nil
		}
		select {
		case <-ctx.Done():
			return false, samples, ctx.Err()
		case <-time.After(every):
		}
	}
}
