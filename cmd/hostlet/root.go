package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/textcap"
)

// globalFlags are the flags every command takes.
type globalFlags struct {
	configFiles []string
}

func newRootCommand() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "hostlet",
		Short:         "A declarative, GitOps-style host agent for Docker",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringArrayVar(&g.configFiles, "config", nil, "config file (default $HOSTLET_CONFIG, ./hostlet.yaml, /etc/hostlet/hostlet.yaml); diff takes several, one per host")
	root.AddCommand(
		newVersionCommand(),
		newValidateCommand(g),
		newRunCommand(g),
		newPauseCommand(),
		newStatusCommand(g),
		newDiffCommand(g),
		newVolumesCommand(g),
		newHoldCommand(g),
		newReleaseCommand(g),
		newSyncCommand(g),
		newPublishCommand(g),
		newFleetCommand(g),
		newImagesCommand(),
	)
	return root
}

// load reads the one config file given (or found by the search order).
func (g *globalFlags) load() (*config.Config, error) {
	if len(g.configFiles) > 1 {
		return nil, fmt.Errorf("--config given %d times; only diff and publish take several", len(g.configFiles))
	}
	return config.Load(g.configFile())
}

func (g *globalFlags) configFile() string {
	if len(g.configFiles) == 0 {
		return ""
	}
	return g.configFiles[0]
}

// newLogger returns the logger of the config's level and format, with the
// message and every attribute value of a line cut to textcap.LogValueBytes
// (an error quoting a huge file stays a short line).
func newLogger(w io.Writer, c *config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Log.Level))
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.Log.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(textcap.NewLogHandler(h, textcap.LogValueBytes))
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print version, commit and Go version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			goVersion := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVersion = bi.GoVersion
			}
			fmt.Fprintf(cmd.OutOrStdout(), "hostlet %s\ncommit: %s\ngo: %s\n", version, commit, goVersion)
			return nil
		},
	}
}

func checkOutputFormat(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("-o %q: want text or json", o)
	}
	return nil
}
