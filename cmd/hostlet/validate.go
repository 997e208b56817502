package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/manifest"
	"github.com/hostlet/hostlet/manifest/project"
	"github.com/hostlet/hostlet/sources"
	"github.com/hostlet/hostlet/sources/configured"
	"github.com/hostlet/hostlet/sources/desired"
	"github.com/hostlet/hostlet/validate"
)

func newValidateCommand(g *globalFlags) *cobra.Command {
	var (
		output      string
		sourceFlags []string
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
			overrides, err := parseSourceFlags(sourceFlags)
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
			var reads []sourceRead
			if len(args) > 0 {
				if len(overrides) > 0 {
					return fmt.Errorf("--source applies to configured sources; do not combine it with PATH arguments")
				}
				for _, a := range args {
					reads = append(reads, readPathSource(cmd.Context(), a, configured.Renderer(cfg)))
				}
			} else {
				if reads, err = readConfiguredSources(cmd.Context(), cfg, overrides); err != nil {
					return err
				}
			}
			rep := buildValidateReport(reads, opts)
			if output == "json" {
				err = writeJSON(cmd.OutOrStdout(), rep)
			} else {
				err = rep.writeText(cmd.OutOrStdout())
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
	return cmd
}

// sourceRead is one source read once: its snapshot and the read's error.
type sourceRead struct {
	manifest.Snapshot
	Err error
	// Pushed: a push source read without --source. Its set is what was
	// pushed to the running hostlet, unknown here.
	Pushed bool
}

// readPathSource reads a PATH argument as one source named after it. Files
// inside a folder are named relative to it; a file argument is the source.
func readPathSource(ctx context.Context, path string, r *project.Renderer) sourceRead {
	base, paths := "", []string{path}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		base, paths = path, []string{"."}
	}
	snap, err := sources.ReadTree(ctx, base, paths, path, r)
	snap.Type = config.TypeFile
	if base == "" {
		for i := range snap.Manifests {
			snap.Manifests[i].Origin.File = ""
			for _, e := range snap.Manifests[i].Errors {
				e.Origin.File = ""
			}
		}
		for _, e := range validate.Flatten(err) {
			e.Origin.File = ""
		}
	}
	return sourceRead{Snapshot: snap, Err: err}
}

// openSources makes every configured source, reading source NAME from
// overrides[NAME] when given; close releases what they hold.
func openSources(cfg *config.Config, overrides map[string]string) (srcs []sources.Source, close func(), err error) {
	for _, name := range slices.Sorted(maps.Keys(overrides)) {
		if !hasSource(cfg, name) {
			return nil, nil, fmt.Errorf("--source %s: no source named %q in %s", name, name, configName(cfg))
		}
	}
	deps := configured.Deps{Dirs: overrides, Compose: configured.Renderer(cfg)}
	close = func() {}
	if len(cfg.Etcd.Endpoints) > 0 {
		etcd, err := sources.DialEtcd(cfg.Etcd.Endpoints)
		if err != nil {
			return nil, nil, err
		}
		deps.Etcd, close = etcd, func() { etcd.Close() }
	}
	if srcs, err = configured.All(cfg, deps); err != nil {
		close()
		return nil, nil, err
	}
	return srcs, close, nil
}

// readSources reads every source once, in order.
func readSources(ctx context.Context, srcs []sources.Source) []sourceRead {
	out := make([]sourceRead, 0, len(srcs))
	for _, s := range srcs {
		snap, err := s.Read(ctx)
		r := sourceRead{Snapshot: snap, Err: err}
		if errors.Is(err, sources.ErrPushOnly) {
			r.Err, r.Pushed = nil, true
		}
		out = append(out, r)
	}
	return out
}

// readConfiguredSources reads every configured source once, in config order.
func readConfiguredSources(ctx context.Context, cfg *config.Config, overrides map[string]string) ([]sourceRead, error) {
	srcs, close, err := openSources(cfg, overrides)
	if err != nil {
		return nil, err
	}
	defer close()
	return readSources(ctx, srcs), nil
}

func configName(cfg *config.Config) string {
	if cfg.File == "" {
		return "the configuration (no config file found)"
	}
	return cfg.File
}

// validateReport is the output of validate, text or JSON.
type validateReport struct {
	Valid    bool                 `json:"valid"`
	Sources  []sourceReport       `json:"sources"`
	Accepted []acceptedManifest   `json:"accepted"`
	Errors   []*manifest.Error    `json:"errors"`
	Rejected []validate.Rejection `json:"rejected"`
}

type sourceReport struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Revision  string `json:"revision,omitempty"`
	Files     int    `json:"files"`
	Manifests int    `json:"manifests"`
	Error     string `json:"error,omitempty"`
}

type acceptedManifest struct {
	ID     string          `json:"id"`
	Origin manifest.Origin `json:"origin"`
}

func buildValidateReport(reads []sourceRead, opts validate.Options) validateReport {
	rep := validateReport{Accepted: []acceptedManifest{}, Errors: []*manifest.Error{}, Rejected: []validate.Rejection{}}
	in := desired.Input{Options: desired.Options{Validate: opts}}
	for _, r := range reads {
		sr := sourceReport{Name: r.Name, Type: r.Type, Revision: r.Revision, Files: r.Files, Manifests: len(r.Manifests)}
		for _, e := range validate.Flatten(r.Err) {
			if e.Origin.Source == "" {
				e.Origin.Source = r.Name
			}
			rep.Errors = append(rep.Errors, e)
		}
		if r.Err != nil {
			sr.Error = r.Err.Error()
		}
		rep.Sources = append(rep.Sources, sr)
		in.Sources = append(in.Sources, desired.Source{Snapshot: r.Snapshot, Delivered: true})
	}
	res := desired.Compute(in)
	for _, a := range res.Accepted {
		rep.Accepted = append(rep.Accepted, acceptedManifest{ID: a.Manifest.ID, Origin: a.Origin})
	}
	rep.Rejected = append(rep.Rejected, res.Rejected...)
	for _, rj := range res.Rejected {
		rep.Errors = append(rep.Errors, rj.Errors...)
	}
	rep.Valid = len(rep.Errors) == 0
	return rep
}

func (r validateReport) writeText(w io.Writer) error {
	for _, e := range r.Errors {
		// A file name, an etcd key, a value: from outside.
		if _, err := fmt.Fprintln(w, terminalText(e.Error())); err != nil {
			return err
		}
	}
	total := len(r.Accepted) + len(r.Rejected)
	if r.Valid {
		_, err := fmt.Fprintf(w, "OK: %d manifests in %d sources, all valid.\n", total, len(r.Sources))
		return err
	}
	_, err := fmt.Fprintf(w, "INVALID: %d errors; %d manifests valid, %d rejected, in %d sources.\n",
		len(r.Errors), len(r.Accepted), len(r.Rejected), len(r.Sources))
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "->" in reasons stays readable
	return enc.Encode(v)
}
