package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/internal/textout"
	"github.com/hostlet/hostlet/sources/configured"
	hsync "github.com/hostlet/hostlet/sync"
	"github.com/hostlet/hostlet/validate"
)

func newValidateCommand(g *globalFlags) *cobra.Command {
	var (
		output           string
		sourceFlags      []string
		secretsKey       string
		requireEncrypted []string
	)
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Decode and validate manifests: the given files and folders, or every configured source",
		Long: `Decode and validate manifests and report every error, not the first.

Each PATH is one source, in the order given: duplicate IDs and host-port
conflicts are decided by that order. With no PATH, every source of the
config is read once; --source NAME=DIR reads source NAME from a local folder
(a git checkout for git sources) instead, so CI needs no network.

Exit status: 0 valid, 1 invalid or unreadable.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutputFormat(output); err != nil {
				return err
			}
			overrides, err := hostplan.ParseSourceFlags(sourceFlags)
			if err != nil {
				return err
			}
			var (
				cfg  *config.Config
				opts validate.Options
			)
			if len(args) == 0 || len(g.configFiles) > 0 {
				if cfg, err = g.load(); err != nil {
					return err
				}
				// Host paths are resolved where they exist on this machine
				// and checked as text where they do not (CI on another
				// machine); the host resolves them again when it mounts.
				opts = configured.ValidateOptions(cfg)
			}
			var reads []hostplan.Read
			if len(args) > 0 {
				if len(overrides) > 0 {
					return fmt.Errorf("--source applies to configured sources; do not combine it with PATH arguments")
				}
				for _, a := range args {
					reads = append(reads, hostplan.ReadPath(cmd.Context(), a, configured.OfflineRenderer(cfg)))
				}
			} else {
				if reads, err = hostplan.ReadConfigured(cmd.Context(), cfg, overrides); err != nil {
					return err
				}
			}
			checks, err := secretChecks(cmd.Context(), cfg, secretsKey, requireEncrypted)
			if err != nil {
				return err
			}
			secretErrs := hostplan.CheckSecrets(cmd.Context(), reads, checks)
			rep := hostplan.Validate(reads, opts)
			rep.Errors = append(rep.Errors, secretErrs...)
			rep.Valid = rep.Valid && len(secretErrs) == 0
			if output == "json" {
				err = writeJSON(cmd.OutOrStdout(), rep)
			} else {
				err = textout.Validate(cmd.OutOrStdout(), rep)
			}
			if err != nil {
				return err
			}
			if !rep.Valid {
				return &exitError{code: 1, silent: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringArrayVar(&sourceFlags, "source", nil, "read source NAME from folder DIR instead of its configured location (NAME=DIR, repeatable)")
	cmd.Flags().StringVar(&secretsKey, "secrets-key", "", "decrypt the SOPS files the manifests use with this age identity file (or SSH key), and validate them fully")
	cmd.Flags().StringArrayVar(&requireEncrypted, "require-encrypted", nil, "fail on a file of a source matching GLOB that is not wholly SOPS-encrypted (repeatable; a GLOB without / matches file names)")
	return cmd
}

// secretChecks are the checks of encrypted files validate makes: the
// host's recipients (from the config), the key --secrets-key names, the
// globs of --require-encrypted.
func secretChecks(ctx context.Context, cfg *config.Config, key string, require []string) (hostplan.SecretChecks, error) {
	c := hostplan.SecretChecks{RequireEncrypted: require, MAC: hsync.RandomEnvHasher().SecretMAC}
	for _, g := range require {
		if _, err := path.Match(g, ""); err != nil {
			return c, fmt.Errorf("--require-encrypted %q: %w", g, err)
		}
	}
	helper := ""
	if cfg != nil {
		c.Host, c.Recipients, helper = cfg.Hostname, cfg.Secrets.Recipients, cfg.Secrets.Helper
	}
	if key != "" {
		d, err := hostplan.SecretKeys(ctx, key, helper)
		if err != nil {
			return c, err
		}
		c.Decrypter = d
	}
	return c, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "->" in reasons stays readable
	return enc.Encode(v)
}
