package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/api/client"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/reporter"
	"github.com/hostlet/hostlet/internal/textout"
	"github.com/hostlet/hostlet/sources"
)

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
			v, err := readStatus(ctx, cfg, host)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), statusJSON{Document: v.Doc, Alive: v.Alive})
			}
			return textout.Status(textout.TerminalSafe(cmd.OutOrStdout()), v)
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "host to show (default: this host)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// readStatus reads what host last reported: from etcd when the config
// has etcd.endpoints, else from the local API.
func readStatus(ctx context.Context, cfg *config.Config, host string) (textout.HostStatus, error) {
	if len(cfg.Etcd.Endpoints) > 0 {
		return statusFromEtcd(ctx, cfg, host)
	}
	return statusFromAPI(ctx, cfg, host)
}

func statusFromAPI(ctx context.Context, cfg *config.Config, host string) (textout.HostStatus, error) {
	if cfg.Listen == "" {
		return textout.HostStatus{}, errors.New("no etcd.endpoints and listen is empty: nowhere to read a status from")
	}
	tok, _ := cfg.Token() // GET /status needs none unless the API has one
	doc, err := client.New(cfg.Listen, tok).Status(ctx, host)
	if err != nil {
		return textout.HostStatus{}, err
	}
	return textout.HostStatus{Host: host, Alive: true, Doc: doc}, nil
}

func statusFromEtcd(ctx context.Context, cfg *config.Config, host string) (textout.HostStatus, error) {
	cli, err := sources.DialEtcd(cfg.Etcd.Endpoints)
	if err != nil {
		return textout.HostStatus{}, redact.Error(err, cfg.Etcd.Endpoints...)
	}
	defer cli.Close()
	statusKey, aliveKey, _ := reporter.Keys(cfg.Etcd.Prefix, host)
	resp, err := cli.Get(ctx, statusKey)
	if err != nil {
		return textout.HostStatus{}, redact.Error(fmt.Errorf("etcd %v unreachable: %w", textout.Endpoints(cfg.Etcd.Endpoints), err), cfg.Etcd.Endpoints...)
	}
	if len(resp.Kvs) == 0 {
		return textout.HostStatus{}, fmt.Errorf("no status for host %q in etcd (key %s)", host, statusKey)
	}
	var doc api.Document
	if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
		return textout.HostStatus{}, fmt.Errorf("status of %s in etcd: %w", host, err)
	}
	alive, err := cli.Get(ctx, aliveKey)
	if err != nil {
		return textout.HostStatus{}, redact.Error(fmt.Errorf("etcd %v unreachable: %w", textout.Endpoints(cfg.Etcd.Endpoints), err), cfg.Etcd.Endpoints...)
	}
	return textout.HostStatus{Host: host, Alive: len(alive.Kvs) > 0, Doc: doc}, nil
}
