package textout

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hostlet/hostlet/internal/fleet"
)

// Fleet prints the fleet view of `hostlet fleet status`: the latest
// release, then a row per host (the reasons a status is unreadable below
// the table), then the view's notes. prefix and sel say, when no host is
// listed, where none reports or that none matches.
func Fleet(w io.Writer, v fleet.View, prefix string, sel fleet.Selector) error {
	behind := 0
	for _, h := range v.Hosts {
		if h.Behind {
			behind++
		}
	}
	Fprintf(w, "latest release: %s; %d hosts, %d behind\n", releaseText(v), len(v.Hosts), behind)
	if len(v.Hosts) == 0 {
		if sel.String() == "*" {
			fmt.Fprintf(w, "no host reports under %s/status/\n", prefix)
		} else {
			Fprintf(w, "no host matches selector %s\n", sel.String())
		}
	} else if err := fleetTable(w, v.Hosts); err != nil {
		return err
	}
	for _, n := range v.Notes {
		Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// releaseText is the latest release, its time and its state ("none").
func releaseText(v fleet.View) string {
	if v.LatestRelease == "" {
		return "none"
	}
	release := short(v.LatestRelease)
	var about []string
	if !v.ReleaseTime.IsZero() {
		about = append(about, v.ReleaseTime.Format(time.RFC3339))
	}
	if v.ReleaseState != "" {
		state := v.ReleaseState
		if v.ReleaseReason != "" {
			state += ": " + v.ReleaseReason
		}
		about = append(about, state)
	}
	if len(about) > 0 {
		release += " (" + strings.Join(about, ", ") + ")"
	}
	return release
}

// fleetTable prints a row per host, then the reasons of the statuses
// that could not be read.
func fleetTable(w io.Writer, hosts []fleet.HostRow) error {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tALIVE\tREVISION\tPODS\tLAST SYNC\tERRORS\tROLLBACKS")
	var unreadable []string
	for _, h := range hosts {
		host := h.Host
		if h.Behind {
			host += " (behind)"
		}
		if h.Error != "" {
			// The reason goes below the table, which stays narrow.
			Fprintf(tw, "%s\t%s\t-\t-\t-\tstatus unreadable\t-\n", host, yesNo(h.Alive))
			unreadable = append(unreadable, "  "+h.Host+": "+h.Error)
			continue
		}
		Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", host, yesNo(h.Alive), dash(short(h.Revision)), podsText(h.Pods), lastSyncText(h.LastSync), h.Errors, h.Rollbacks)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(unreadable) > 0 {
		fmt.Fprintf(w, "\nunreadable status:\n")
		for _, u := range unreadable {
			Fprintf(w, "%s\n", u)
		}
	}
	return nil
}

// podsText is "3 running, 1 failed": phases in fleet.PhaseOrder, then
// the others sorted.
func podsText(pods map[string]int) string {
	var parts []string
	seen := map[string]bool{}
	for _, p := range fleet.PhaseOrder {
		seen[p] = true
		if n := pods[p]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+strings.ToLower(p))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pods)) {
		if !seen[p] && pods[p] > 0 {
			name := strings.ToLower(p)
			if name == "" {
				name = "unknown"
			}
			parts = append(parts, strconv.Itoa(pods[p])+" "+name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// lastSyncText is when a host's last sync started ("never"), and
// "error" when it failed.
func lastSyncText(s fleet.LastSync) string {
	text := "never"
	if !s.Start.IsZero() {
		text = s.Start.Format(time.RFC3339)
	}
	if s.Error != "" {
		text += " error"
	}
	return text
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
