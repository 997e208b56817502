package config

import (
	"errors"

	"github.com/hostlet/hostlet/internal/window"
)

// checkWindows reports through bad every bad entry of sync.windows and a
// bad sync.timezone, so that hostlet stops at start rather than apply
// changes at the wrong time.
func (c *Config) checkWindows(bad badFunc) {
	_, err := window.Parse(c.Sync.Windows, c.Sync.Timezone)
	var errs window.ErrorList
	switch {
	case errors.As(err, &errs):
		for _, e := range errs {
			bad(e.Field, "%q: %s", e.Value, e.Detail)
		}
	case err != nil:
		bad("sync.windows", "%v", err)
	}
}

// Windows returns the maintenance windows: sync.windows in sync.timezone.
// It is always open when sync.windows is empty. Each call parses again
// and reads the zone's file: call it once and keep the Schedule. A config
// Load returned has been checked, so only a Config made by hand can fail
// here.
func (c *Config) Windows() (*window.Schedule, error) {
	return window.Parse(c.Sync.Windows, c.Sync.Timezone)
}
