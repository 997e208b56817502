// Package config holds hostlet's host configuration: its keys and defaults,
// loading with viper (search order, HOSTLET_* environment overrides), strict
// checking that names the offending key, and {{.Hostname}} templating.
package config
