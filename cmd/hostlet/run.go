package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newRunCommand(g *globalFlags) *cobra.Command {
	var once bool
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the agent: read sources, make Docker match, report status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := g.load(); err != nil {
				return err
			}
			return errors.New("run: not implemented yet")
		},
	}
	cmd.Flags().BoolVar(&once, "once", false, "read every source once, sync once, report, exit")
	return cmd
}
