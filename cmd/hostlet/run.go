package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/agent"
)

func newRunCommand(g *globalFlags) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the agent: read sources, make Docker match, report status",
		Long: `Run the agent: read every source, make the local Docker engine match the
desired pods, and serve the HTTP API. SIGTERM or SIGINT stops hostlet and
leaves every container running; the next hostlet adopts them.

With --once: read every source once, sync once, and exit (1 if the sync
failed for any pod).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tuneMemory()
			cfg, err := g.load()
			if err != nil {
				return err
			}
			log := newLogger(os.Stderr, cfg)
			releaseStartPages(log)
			startPprof(cmd.Context(), log)
			return agent.Run(cmd.Context(), cfg, agent.Options{Version: version, Commit: commit, Once: once}, log)
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "read every source once, sync once, report, exit")
	return cmd
}
