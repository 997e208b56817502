package imagescmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/internal/hostplan"
	"github.com/hostlet/hostlet/sources/configured"
)

// maxErrorsShown bounds the validation errors an update shows.
const maxErrorsShown = 50

// validateHosts checks that the sources of every host config given, the
// ones in dirs read from there, validate as `hostlet validate --source`
// would; the error lists every problem (up to maxErrorsShown).
func validateHosts(ctx context.Context, configs []string, dirs map[string]string) error {
	var problems []string
	for _, file := range configs {
		cfg, err := config.Load(file)
		if err != nil {
			return fmt.Errorf("--config %s: %w", file, err)
		}
		overrides := map[string]string{}
		for _, s := range cfg.Sources {
			if d, ok := dirs[s.Name]; ok {
				overrides[s.Name] = d
			}
		}
		reads, err := hostplan.ReadConfigured(ctx, cfg, overrides)
		if err != nil {
			return fmt.Errorf("--config %s: %w", file, err)
		}
		rep := hostplan.Validate(reads, configured.ValidateOptions(cfg))
		for _, e := range rep.Errors {
			problems = append(problems, fmt.Sprintf("host %s: %v", cfg.Hostname, e))
		}
		for _, r := range rep.Rejected {
			problems = append(problems, fmt.Sprintf("host %s: pod %s (%s:%s) rejected: %s", cfg.Hostname, r.ID, r.Source, r.Origin.File, strings.Join(r.Reasons, "; ")))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	n := len(problems)
	if n > maxErrorsShown {
		problems = append(problems[:maxErrorsShown], fmt.Sprintf("and %d more", n-maxErrorsShown))
	}
	return fmt.Errorf("the edited sources do not validate:\n  %s", strings.Join(problems, "\n  "))
}
