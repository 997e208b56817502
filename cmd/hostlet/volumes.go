package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/textout"
	hruntime "github.com/hostlet/hostlet/runtime"
	"github.com/hostlet/hostlet/sync/datafolder"
)

func newVolumesCommand(g *globalFlags) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "volumes",
		Short: "List the volumes of this hostlet: named volumes and data folders (kept until removed) and pods' empty dirs",
		Long: `List the Docker volumes this hostlet instance made, in use or not, and
its data folders (a Compose project's relative binds that the project
does not hold: folders under compose.dataDir, named <project>/<folder>).

A pod's dockerVolume (a Compose project's named volume) and a data
folder outlive their pods: hostlet never removes one by itself;
"hostlet volumes rm NAME..." does. A pod's empty-dir volume goes with its
pod.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			cfg, rt, err := openEngine(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer rt.Close()
			vols, err := rt.Volumes(cmd.Context())
			if err != nil {
				return err
			}
			folders, err := dataFolderInfos(cmd.Context(), cfg, rt)
			if err != nil {
				return err
			}
			vols = append(vols, folders...)
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

// dataFolderInfos lists the instance's data folders with their sizes and
// the containers that mount anything in them.
func dataFolderInfos(ctx context.Context, cfg *config.Config, rt *hruntime.Docker) ([]hruntime.VolumeInfo, error) {
	folders, err := datafolder.New(cfg.Compose.DataDir, cfg.Instance).Folders()
	if err != nil || len(folders) == 0 {
		return nil, err
	}
	binds, err := rt.BindUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]hruntime.VolumeInfo, 0, len(folders))
	for _, f := range folders {
		out = append(out, hruntime.VolumeInfo{Name: f.Name, Persistent: true, UsedBy: usersUnder(binds, f.Path),
			Path: f.Path, SizeBytes: f.SizeBytes, Partial: f.Partial})
	}
	return out, nil
}

// usersUnder are the containers whose bind sources are dir, below it or
// above it (a mount of a folder holding dir sees it too).
func usersUnder(binds map[string][]string, dir string) []string {
	users := []string{}
	for src, names := range binds {
		if src == dir || strings.HasPrefix(src, dir+"/") || strings.HasPrefix(dir, src+"/") {
			users = append(users, names...)
		}
	}
	return users
}

func newVolumesRmCommand(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove volumes and data folders of this hostlet that no container uses",
		Long: `Remove the named volumes and data folders (<project>/<folder>, as
"hostlet volumes" lists them, with everything in them). One a container
still mounts (any state, any instance), or a volume this hostlet instance
did not make, is left, with an error naming it; the others are removed.
Exit status: 0 when every one was removed, 1 otherwise.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, rt, err := openEngine(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer rt.Close()
			var errs []error
			for _, name := range args {
				if err := removeVolume(cmd.Context(), cfg, rt, name); err != nil {
					errs = append(errs, err)
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", name)
			}
			return errors.Join(errs...)
		},
	}
}

// removeVolume removes the Docker volume or, for a name with a '/', the
// data folder name, unless a container mounts it.
func removeVolume(ctx context.Context, cfg *config.Config, rt *hruntime.Docker, name string) error {
	if !strings.Contains(name, "/") {
		return rt.RemoveOwnVolume(ctx, name)
	}
	var listErr error
	err := datafolder.New(cfg.Compose.DataDir, cfg.Instance).Remove(name, func(dir string) []string {
		binds, err := rt.BindUsers(ctx)
		if err != nil {
			listErr = err
			return []string{"(the containers could not be listed)"}
		}
		return usersUnder(binds, dir)
	})
	return errors.Join(err, listErr)
}

// openEngine connects to the engine of the config's docker.host as the
// config's instance.
func openEngine(ctx context.Context, g *globalFlags) (*config.Config, *hruntime.Docker, error) {
	cfg, err := g.load()
	if err != nil {
		return nil, nil, err
	}
	rt, err := hruntime.New(ctx, cfg.Docker.Host, cfg.Instance, slog.New(slog.DiscardHandler), hruntime.WithOwnerKey(hruntime.ReadOwnerKey(cfg.StateDir)))
	return cfg, rt, err
}
