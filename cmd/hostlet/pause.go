package main

import (
	"github.com/spf13/cobra"
)

// newPauseCommand is the infra container's process: it holds the pod's
// network namespace and does nothing until it is stopped.
func newPauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "pause",
		Short:  "Hold a pod's network namespace (the infra container's process)",
		Args:   cobra.NoArgs,
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			<-cmd.Context().Done()
			return nil
		},
	}
}
