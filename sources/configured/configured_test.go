package configured_test

import (
	"path/filepath"
	"testing"

	"github.com/hostlet/hostlet/internal/config"
	"github.com/hostlet/hostlet/sources/configured"
)

// ~ in a bind source is compose.home where it is set; on this host it is
// otherwise the home of the user hostlet runs as, and for another host
// (publish) it stays unknown, so a project using it is refused there
// rather than given the publisher's home.
func TestHomeOfTheHostThatRuns(t *testing.T) {
	set := &config.Config{Compose: config.Compose{Home: "/srv/ops"}}
	unset := &config.Config{}
	if got := configured.Renderer(set).Host.Home; got != "/srv/ops" {
		t.Errorf("this host, compose.home set: home %q, want /srv/ops", got)
	}
	if got := configured.Renderer(unset).Host.Home; !filepath.IsAbs(got) {
		t.Errorf("this host, compose.home unset: home %q, want the user's home", got)
	}
	if got := configured.RendererFor(set).Host.Home; got != "/srv/ops" {
		t.Errorf("another host, compose.home set: home %q, want /srv/ops", got)
	}
	if got := configured.RendererFor(unset).Host.Home; got != "" {
		t.Errorf("another host, compose.home unset: home %q, want none (unknown)", got)
	}
	if r := configured.OfflineRenderer(unset); !filepath.IsAbs(r.Host.Home) || !r.Host.HomeIsGuess {
		t.Errorf("validate and diff, compose.home unset: home %q, guess %v; want the user's home, noted as a guess", r.Host.Home, r.Host.HomeIsGuess)
	}
	if r := configured.OfflineRenderer(set); r.Host.Home != "/srv/ops" || r.Host.HomeIsGuess {
		t.Errorf("validate and diff, compose.home set: home %q, guess %v; want /srv/ops, no guess", r.Host.Home, r.Host.HomeIsGuess)
	}
}
