package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// freePorts returns n distinct TCP ports on 127.0.0.1 that nothing listens
// on now (the kernel picks them; they are released before use).
func freePorts(n int) ([]int, error) {
	var (
		lns   []net.Listener
		ports []int
	)
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// prober asks the demo servers for the value of envName. A connect gives
// up after 200 ms: a SYN the engine's forwarding drops while a container
// comes up is sent again by the kernel only after 1 s, which would time
// the step up to a second late; the next round (50 ms on) connects anew.
var prober = &http.Client{
	Timeout: 2 * time.Second,
	Transport: &http.Transport{
		DisableKeepAlives: true,
		Proxy:             nil,
		DialContext:       (&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext,
	},
}

func probe(ctx context.Context, port int) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/env?name="+envName, nil)
	if err != nil {
		return "", err
	}
	resp, err := prober.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %s", resp.Status)
	}
	return string(b), nil
}

// waitAnswer polls every port until each one has answered want, and
// returns the time the last of them did. Ports that answered are not asked
// again. Rounds are 50 ms apart, at most 16 requests at once.
func waitAnswer(ctx context.Context, ports []int, want string, timeout time.Duration) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := slices.Clone(ports)
	var last time.Time
	for {
		var (
			mu    sync.Mutex
			wg    sync.WaitGroup
			still []int
			sem   = make(chan struct{}, 16)
		)
		for _, p := range pending {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				got, err := probe(ctx, p)
				now := time.Now()
				mu.Lock()
				defer mu.Unlock()
				if err == nil && got == want {
					if now.After(last) {
						last = now
					}
					return
				}
				still = append(still, p)
			}()
		}
		wg.Wait()
		if len(still) == 0 {
			return last, nil
		}
		pending = still
		select {
		case <-ctx.Done():
			slices.Sort(pending)
			return time.Time{}, fmt.Errorf("%d of %d ports did not answer %s=%s (e.g. %d): %w", len(pending), len(ports), envName, want, pending[0], ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
