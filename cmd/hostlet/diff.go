package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/internal/textout"
)

func newDiffCommand(g *globalFlags) *cobra.Command {
	var (
		against     string
		output      string
		sourceFlags []string
		secretsKey  string
	)
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Dry run: the plan `run --once` would apply; nothing is changed",
		Long: `Show what hostlet would do to each host: the plan "hostlet run --once"
would apply, computed by the same function. Nothing is changed.

--against live       this host's Docker engine (default)
--against status     what the host last reported (its API, or etcd): for CI without Docker
--against ref:REV    the same sources at git revision REV (needs --source NAME=DIR for
                     every git source, DIR a checkout); other sources read the same on both sides

--source NAME=DIR reads source NAME from a local folder as it is (uncommitted edits
included) instead of its URL, so CI needs no network or credentials. --config may be
given once per host; each host's plan is printed under its name.

Sources are merged as the running hostlet merges them: a rejected manifest of a pod
that runs leaves that pod as it runs, and a source that cannot be read keeps what
runs of it. Env values never appear. docs/diff.md describes the output.

Against live (the rollouts saved under stateDir) and status, a pod whose desired
version the host rolled back is shown "held back" and a pod an operator holds
"held by": their changes are what "run --once" would not do, counted apart
(held back, held) and not as changes.

Exit status: 0 no changes, 2 changes, 1 errors or invalid/rejected manifests (after the
plan is printed). Changes that are all held back or held are no changes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			overrides, err := hostplan.ParseSourceFlags(sourceFlags)
			if err != nil {
				return err
			}
			if _, err := hostplan.ParseAgainst(against); err != nil {
				return err
			}
			files := g.configFiles
			if len(files) == 0 {
				files = []string{""}
			}
			opts := hostplan.Options{Overrides: overrides, Status: hostStatus, Warnings: cmd.ErrOrStderr(), SecretsKey: secretsKey}
			var hosts []hostplan.Plan
			for _, f := range files {
				hosts = append(hosts, hostplan.Diff(cmd.Context(), f, against, opts))
			}
			return writeDiff(cmd.OutOrStdout(), output, hosts)
		},
	}
	cmd.Flags().StringVar(&against, "against", "live", "what to plan against: live, status, or ref:REV")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringArrayVar(&sourceFlags, "source", nil, "read source NAME from folder DIR (NAME=DIR, repeatable)")
	cmd.Flags().StringVar(&secretsKey, "secrets-key", "", "decrypt the SOPS files the manifests use with this age identity file (or SSH key), and compare their values as the host does")
	return cmd
}

// writeDiff prints the hosts' plans as text or JSON and returns the exit
// status they make (as terraform plan -detailed-exitcode).
func writeDiff(out io.Writer, output string, hosts []hostplan.Plan) error {
	if output == "json" {
		if err := writeJSON(out, diffReport{Hosts: hosts}); err != nil {
			return err
		}
	} else {
		textout.Plans(out, hosts, textout.IsTerminal(out))
	}
	code := 0
	for _, hp := range hosts {
		switch {
		case len(hp.Errors) > 0 || hp.Summary.Rejected > 0:
			code = 1
		case hp.Changed() && code == 0:
			code = 2
		}
	}
	if code != 0 {
		return &exitError{code: code, silent: true}
	}
	return nil
}

// diffReport is the JSON output of diff (docs/diff.md documents it).
type diffReport struct {
	Hosts []hostplan.Plan `json:"hosts"`
}

// statusTimeout bounds reading a host's status (its API or etcd): an
// unresponsive host must not hang CI.
var statusTimeout = 15 * time.Second

// hostStatus reads what the host of cfg last reported (--against status):
// from etcd when it has etcd.endpoints, else from its API.
func hostStatus(ctx context.Context, cfg *config.Config) (api.Document, error) {
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	v, err := readStatus(ctx, cfg, cfg.Hostname)
	return v.Doc, err
}
