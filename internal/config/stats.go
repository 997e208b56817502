package config

import (
	"net/url"

	"github.com/hostlet/hostlet/internal/redact"
)

// Stats configures where GET /stats reads its figures.
type Stats struct {
	// CAdvisor is the base URL of a cAdvisor daemon
	// ("http://127.0.0.1:8080"): /stats then reads the machine's and each
	// container's figures from its REST API. Empty (the default) reads
	// the Docker engine's stats API and /proc.
	CAdvisor string `mapstructure:"cadvisor"`
}

// check reports through bad what is wrong with the stats keys.
func (s Stats) check(bad func(key, format string, args ...any)) {
	if s.CAdvisor == "" {
		return
	}
	u, err := url.Parse(s.CAdvisor)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("stats.cadvisor", "%q is not an http(s) URL", redact.URL(s.CAdvisor))
		return
	}
	if u.RawQuery != "" || u.Fragment != "" {
		bad("stats.cadvisor", "%q: a cAdvisor base URL has no query or fragment", redact.URL(s.CAdvisor))
	}
}
