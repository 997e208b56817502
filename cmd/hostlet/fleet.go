package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/fleet"
	"github.com/hostlet/hostlet/internal/redact"
	"github.com/hostlet/hostlet/internal/textout"
	"github.com/hostlet/hostlet/sources"
)

// defaultEtcdPrefix is the config's default etcd.prefix, for a fleet
// command given --etcd-endpoints and no config.
const defaultEtcdPrefix = "/hostlet"

// etcdFlags are the etcd flags of the fleet commands: they override the
// config's etcd block.
type etcdFlags struct {
	endpoints []string
	prefix    string
}

func (f *etcdFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.endpoints, "etcd-endpoints", nil, "etcd endpoints, URL,... (default: the config's etcd.endpoints)")
	cmd.Flags().StringVar(&f.prefix, "etcd-prefix", "", "etcd key prefix (default: the config's etcd.prefix)")
}

// resolve returns the endpoints and prefix to use: the flags, else the
// config's etcd block. The config is read only when a flag is missing
// or --config is given.
func (f *etcdFlags) resolve(cmd *cobra.Command, g *globalFlags) (endpoints []string, prefix string, err error) {
	endpoints, prefix = f.endpoints, f.prefix
	if len(endpoints) == 0 || len(g.configFiles) > 0 {
		cfg, err := g.load()
		if err != nil {
			if len(endpoints) == 0 {
				return nil, "", fmt.Errorf("%w (or give --etcd-endpoints)", err)
			}
			return nil, "", err
		}
		if len(endpoints) == 0 {
			endpoints = cfg.Etcd.Endpoints
		}
		if !cmd.Flags().Changed("etcd-prefix") {
			prefix = cfg.Etcd.Prefix
		}
	}
	if prefix == "" && !cmd.Flags().Changed("etcd-prefix") {
		prefix = defaultEtcdPrefix
	}
	if len(endpoints) == 0 {
		return nil, "", fmt.Errorf("no etcd endpoints: set etcd.endpoints in the config or give --etcd-endpoints")
	}
	return endpoints, prefix, nil
}

func newFleetCommand(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Look at the fleet of hosts reporting to etcd",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newFleetStatusCommand(g), newFleetServeCommand(g))
	return cmd
}

func newFleetStatusCommand(g *globalFlags) *cobra.Command {
	var (
		ef       etcdFlags
		output   string
		selector string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "One line per host from etcd: alive, revision, pods, errors",
		Long: `Show every host that reports to etcd (<etcd.prefix>/status/<host>),
one line each: whether its liveness key is alive, the revision it runs,
its pods by phase, its last sync, its errors (source errors and rejected
manifests) and its rolled-back pods. Hosts behind the latest release
(<etcd.prefix>/releases/, written by hostlet publish) come first, then by
hostname. A host whose status cannot be read is listed with the reason.

Exit status: 0, or 1 when etcd cannot be read.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			sel, err := fleet.ParseSelector(selector)
			if err != nil {
				return err
			}
			endpoints, prefix, err := ef.resolve(cmd, g)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			v, err := fleetView(ctx, endpoints, prefix, sel)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return textout.Fleet(textout.TerminalSafe(cmd.OutOrStdout()), v, prefix, sel)
		},
	}
	ef.add(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&selector, "selector", "*", "hosts whose labels match, k=v[,k=v] or *")
	return cmd
}

// fleetView dials etcd and reads the fleet.
func fleetView(ctx context.Context, endpoints []string, prefix string, sel fleet.Selector) (fleet.View, error) {
	cli, err := sources.DialEtcd(endpoints)
	if err != nil {
		return fleet.View{}, redact.Error(err, endpoints...)
	}
	defer cli.Close()
	v, err := fleet.Rows(ctx, cli, prefix, sel)
	if err != nil {
		return fleet.View{}, redact.Error(fmt.Errorf("etcd %v: %w", textout.Endpoints(endpoints), err), endpoints...)
	}
	return v, nil
}
