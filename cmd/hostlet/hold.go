package main

import (
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/api"
	"github.com/hostlet/hostlet/api/client"
	"github.com/hostlet/hostlet/internal/textout"
)

func newHoldCommand(g *globalFlags) *cobra.Command {
	var by, reason string
	cmd := &cobra.Command{
		Use:   "hold POD",
		Short: "Hold a pod: hostlet leaves it exactly as it is until it is released",
		Long: `Hold a pod through the local API (listen, with the token of tokenFile).

A held pod is neither recreated, removed nor started by hostlet, whatever its
manifest says, until "hostlet release POD"; the hold survives hostlet restarts.
The status shows who holds it, why and since when; "hostlet diff" lists the
changes waiting on it. The pod need not exist yet.

Exit status: 0 held, 1 when the API refused or could not be reached.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newAPIClient(g, "hold", "the API only accepts holds with the token")
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("by") {
				by = currentUser()
			}
			ans, err := c.Hold(cmd.Context(), args[0], api.HoldRequest{By: by, Reason: reason})
			if err != nil {
				return err
			}
			line := fmt.Sprintf("pod %s held by %s since %s", args[0], ans.By, ans.Since.Format(time.RFC3339))
			if ans.Reason != "" {
				line += ": " + ans.Reason
			}
			if ans.Note != "" {
				line += " (" + ans.Note + ")"
			}
			fmt.Fprintln(cmd.OutOrStdout(), textout.Text(line))
			return nil
		},
	}
	cmd.Flags().StringVar(&by, "by", "", "who holds the pod (default: $SUDO_USER, else $USER, else the OS user name)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the pod is held (shown in the status)")
	return cmd
}

func newReleaseCommand(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "release POD",
		Short: "Release a held pod: the next sync applies what waited",
		Long: `Release a pod held with "hostlet hold", through the local API (listen, with
the token of tokenFile). The next sync applies what waited on the hold.

Exit status: 0 released, 1 when the pod was not held, the API refused or could
not be reached.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newAPIClient(g, "release", "the API only accepts releases with the token")
			if err != nil {
				return err
			}
			ans, err := c.Release(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "pod %s released\n", textout.Text(ans.Released))
			return nil
		},
	}
}

func newSyncCommand(g *globalFlags) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "sync",
		Short: "Ask the local hostlet to fetch every source and sync now",
		Long: `Ask the local hostlet (listen, with the token of tokenFile) to fetch every
source and sync now, as a git webhook does (POST /sync).

--force also applies now what waits for a maintenance window: the syncs of the
next minute apply every change, windows or not. Holds still hold.

Exit status: 0 requested, 1 when the API refused or could not be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newAPIClient(g, "sync", "the API only accepts POST /sync with the token")
			if err != nil {
				return err
			}
			ans, err := c.Sync(cmd.Context(), force)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), textout.Text(ans.Status))
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "apply every change now, maintenance windows or not")
	return cmd
}

// newAPIClient finds the local API as status does (listen, an
// unspecified host on loopback) and reads the token; what names the
// command and why says why it needs the token.
func newAPIClient(g *globalFlags, what, why string) (*client.Client, error) {
	cfg, err := g.load()
	if err != nil {
		return nil, err
	}
	if cfg.Listen == "" {
		return nil, fmt.Errorf("hostlet %s needs listen in the config: it asks the local API", what)
	}
	if cfg.TokenFile == "" {
		return nil, fmt.Errorf("hostlet %s needs tokenFile in the config: %s", what, why)
	}
	tok, err := cfg.Token()
	if err != nil {
		return nil, err
	}
	return client.New(client.DialAddr(cfg.Listen), tok), nil
}

// currentUser names who runs hostlet: the user behind sudo, else $USER,
// else the OS user name ("" when none is known: the API says "unknown").
func currentUser() string {
	for _, v := range []string{"SUDO_USER", "USER"} {
		if s := os.Getenv(v); s != "" {
			return s
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
