package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/textout"
	hruntime "github.com/hostlet/hostlet/runtime"
)

func newVolumesCommand(g *globalFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "volumes",
		Short: "List the Docker volumes of this hostlet: named volumes (kept until removed) and pods' empty dirs",
		Long: `List the Docker volumes this hostlet instance made, in use or not.

A pod's dockerVolume (a Compose project's named volume) outlives its pods:
hostlet never removes one by itself; "hostlet volumes rm NAME..." does.
A pod's empty-dir volume goes with its pod.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			rt, err := openEngine(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer rt.Close()
			vols, err := rt.Volumes(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), vols)
			}
			return textout.Volumes(cmd.OutOrStdout(), vols)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.AddCommand(newVolumesRmCommand(g))
	return cmd
}

func newVolumesRmCommand(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove volumes of this hostlet that no container uses",
		Long: `Remove the named volumes. A volume a container still mounts, or one
this hostlet instance did not make, is left, with an error naming it; the
others are removed. Exit status: 0 when every one was removed, 1 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := openEngine(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer rt.Close()
			var errs []error
			for _, name := range args {
				if err := rt.RemoveOwnVolume(cmd.Context(), name); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", name)
			}
			return errors.Join(errs...)
		},
	}
}

// openEngine connects to the engine of the config's docker.host as the
// config's instance.
func openEngine(ctx context.Context, g *globalFlags) (*hruntime.Docker, error) {
	cfg, err := g.load()
	if err != nil {
		return nil, err
	}
	return hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, slog.New(slog.DiscardHandler), hruntime.WithOwnerKey(hruntime.ReadOwnerKey(cfg.StateDir)))
}
