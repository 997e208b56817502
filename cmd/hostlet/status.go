package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/sources"
	hsync "github.com/hostlet/hostlet/sync"
)

// statusView is what `hostlet status` shows: a host's last report and
// whether it is alive.
type statusView struct {
	Host  string
	Alive bool
	From  string
	Doc   api.Document
}

// statusJSON is what `hostlet status -o json` prints: the status document of
// DESIGN.md itself (so `jq .pods` works as on GET /status), with the host's
// liveness as one more field ("alive": false for a host whose liveness key
// has lapsed).
type statusJSON struct {
	api.Document
	Alive bool `json:"alive"`
}

func newStatusCommand(g *globalFlags) *cobra.Command {
	var (
		host   string
		output string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show what a host last reported (its API, or etcd)",
		Long: `Show what a host last reported: pods, containers, phases, restarts,
revisions, rejected manifests and source errors.

With etcd.endpoints configured, the report is read from etcd
(<etcd.prefix>/status/<host>), so any host can be asked; a host whose
liveness key has lapsed is shown with its last report, marked not alive.
Without etcd, the local API (listen) is asked, which must be --host.

Exit status: 0, or 1 when the report cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			cfg, err := g.load()
			if err != nil {
				return err
			}
			if host == "" {
				host = cfg.Hostname
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			defer cancel()
			var v statusView
			if len(cfg.Etcd.Endpoints) > 0 {
				v, err = statusFromEtcd(ctx, cfg, host)
			} else {
				v, err = statusFromAPI(ctx, cfg, host)
			}
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), statusJSON{Document: v.Doc, Alive: v.Alive})
			}
			return v.writeText(terminalSafe(cmd.OutOrStdout()))
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "host to show (default: this host)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func statusFromAPI(ctx context.Context, cfg *config.Config, host string) (statusView, error) {
	if cfg.Listen == "" {
		return statusView{}, errors.New("no etcd.endpoints and listen is empty: nowhere to read a status from")
	}
	url := "http://" + cfg.Listen + "/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return statusView{}, err
	}
	if tok, err := cfg.Token(); err == nil && tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return statusView{}, fmt.Errorf("host %s unreachable: %w", host, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusView{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var doc api.Document
	if err := json.NewDecoder(io.LimitReader(resp.Body, manifest.MaxSize)).Decode(&doc); err != nil {
		return statusView{}, fmt.Errorf("GET %s: %w", url, err)
	}
	if doc.Hostname != host {
		return statusView{}, fmt.Errorf("the local API at %s is host %q, not %q; configure etcd.endpoints to ask other hosts", cfg.Listen, doc.Hostname, host)
	}
	return statusView{Host: host, Alive: true, From: url, Doc: doc}, nil
}

func statusFromEtcd(ctx context.Context, cfg *config.Config, host string) (statusView, error) {
	cli, err := sources.DialEtcd(cfg.Etcd.Endpoints)
	if err != nil {
		return statusView{}, redact.Error(err, cfg.Etcd.Endpoints...)
	}
	defer cli.Close()
	statusKey, aliveKey, _ := reporter.Keys(cfg.Etcd.Prefix, host)
	resp, err := cli.Get(ctx, statusKey)
	if err != nil {
		return statusView{}, redact.Error(fmt.Errorf("etcd %v unreachable: %w", endpointsText(cfg.Etcd.Endpoints), err), cfg.Etcd.Endpoints...)
	}
	if len(resp.Kvs) == 0 {
		return statusView{}, fmt.Errorf("no status for host %q in etcd (key %s)", host, statusKey)
	}
	var doc api.Document
	if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
		return statusView{}, fmt.Errorf("status of %s in etcd: %w", host, err)
	}
	alive, err := cli.Get(ctx, aliveKey)
	if err != nil {
		return statusView{}, redact.Error(fmt.Errorf("etcd %v unreachable: %w", endpointsText(cfg.Etcd.Endpoints), err), cfg.Etcd.Endpoints...)
	}
	return statusView{Host: host, Alive: len(alive.Kvs) > 0, From: "etcd " + statusKey, Doc: doc}, nil
}

// writeText prints the report as text: every value in it is the host's
// (or etcd's, where anyone who can write there may have forged it), so
// each goes through terminalText, on its own row.
func (v statusView) writeText(w io.Writer) error {
	d := v.Doc
	alive := "alive"
	if !v.Alive {
		alive = "NOT ALIVE (liveness key lapsed; last report below)"
	}
	fprintText(w, "host %s: %s; hostlet %s; reported %s\n", v.Host, alive, d.Version, d.Time.Format(time.RFC3339))
	syncErr := d.LastSync.Error
	if syncErr == "" {
		syncErr = "none"
	}
	fprintText(w, "last sync %s (%d ms), error: %s\n", d.LastSync.Start.Format(time.RFC3339), d.LastSync.DurMs, syncErr)
	if d.Window != nil {
		fprintText(w, "maintenance window: %s\n", windowText(*d.Window))
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tTYPE\tREVISION\tLAST SUCCESS\tMANIFESTS\tERROR")
	for _, s := range d.Sources {
		last := "never"
		if !s.LastSuccess.IsZero() {
			last = s.LastSuccess.Format(time.RFC3339)
		}
		errText := s.Error
		if s.Notice != "" {
			errText = strings.TrimPrefix(errText+"; ", "; ") + "notice: " + s.Notice
		}
		fprintText(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, s.Type, short(s.Revision), last, s.Manifests, dash(errText))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "POD\tCONTAINER\tPHASE\tSTATE\tRESTARTS\tREVISION\tIMAGE\tREASON")
	for _, p := range d.Pods {
		reason := p.Reason
		if p.Message != "" {
			reason += ": " + p.Message
		}
		for _, c := range p.Containers {
			fprintText(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", p.ID, c.Name, p.Phase, c.State, c.Restarts, short(p.Revision), c.Image, dash(reason))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var rollouts []string
	for _, p := range d.Pods {
		if text := rolloutText(p.Rollout); text != "" {
			rollouts = append(rollouts, "  "+p.ID+": "+text)
		}
	}
	if len(rollouts) > 0 {
		fmt.Fprintf(w, "\nrollouts:\n")
		for _, r := range rollouts {
			fprintText(w, "%s\n", r)
		}
	}
	if len(d.StateErrors) > 0 {
		fmt.Fprintf(w, "\nstate file problems (stateDir):\n")
		for _, p := range d.StateErrors {
			kept := ""
			if p.KeptAs != "" {
				kept = " (kept as " + p.KeptAs + ")"
			}
			fprintText(w, "  %s: %s failed since %s: %s%s\n", p.File, p.Op, p.Since.Format(time.RFC3339), p.Error, kept)
		}
	}
	if len(d.Rejected) > 0 {
		fmt.Fprintf(w, "\nrejected manifests:\n")
		for _, r := range d.Rejected {
			fprintText(w, "  %s (%s): %s\n", r.ID, r.Source, strings.Join(r.Reasons, "; "))
		}
	}
	return nil
}

// windowText says whether the maintenance window is open, when the next
// opens and until when a force (POST /sync?force=1) applies changes
// anyway.
func windowText(win hsync.Window) string {
	text := "open"
	if !win.Open {
		text = "closed"
		if !win.Next.IsZero() {
			text += ", next opens " + win.Next.Format(time.RFC3339)
		}
	}
	if !win.ForcedUntil.IsZero() {
		text += "; forced until " + win.ForcedUntil.Format(time.RFC3339)
	}
	return text
}

// rolloutText says where a pod's update stands when that says something:
// rolled back, held or progressing ("" when complete or unknown).
func rolloutText(r *hsync.Rollout) string {
	if r == nil {
		return ""
	}
	switch r.State {
	case hsync.RolloutRolledBack:
		text := "ROLLED BACK"
		if r.Reason != "" {
			text += ": " + r.Reason
		}
		if r.Revision != "" {
			text += " (revision " + short(r.Revision) + ")"
		}
		return text
	case hsync.RolloutHeld:
		by, since := "", r.Since
		if r.Hold != nil {
			by, since = r.Hold.By, r.Hold.Since
		}
		text := "HELD"
		if by != "" {
			text += " by " + by
		}
		if !since.IsZero() {
			text += " since " + since.Format(time.RFC3339)
		}
		if r.Reason != "" {
			text += ": " + r.Reason
		}
		return text
	case hsync.RolloutProgressing:
		if r.Reason == "" {
			return "progressing"
		}
		return "progressing: " + r.Reason
	}
	return ""
}

// endpointsText shows etcd endpoints without their credentials.
func endpointsText(eps []string) string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = redact.URL(e)
	}
	return "[" + strings.Join(out, " ") + "]"
}

func short(rev string) string {
	if len(rev) == 40 && !strings.Contains(rev, ":") {
		return rev[:12]
	}
	return rev
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
