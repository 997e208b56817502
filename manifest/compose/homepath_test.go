package compose_test

import (
	"strings"
	"testing"

	"github.com/hostlet/hostlet/manifest/compose"
)

// A bind source from ~ is a host path in the home folder the host's
// compose.home names (by default the home of the user hostlet runs as),
// as Compose expands ~ from the home of whoever runs it; another user's
// home, and ~ where the host's home is not known (publish without
// compose.home), are refused by name. An env_file from ~ is no file of
// the source and stays refused.
func TestBindSourceFromHome(t *testing.T) {
	tests := []struct {
		name, volume, home string
		wantPath, wantErr  string
	}{
		{"a folder in the home", "~/.jitsi-meet-cfg/web:/config", "/home/ops", "/home/ops/.jitsi-meet-cfg/web", ""},
		{"the home itself", "~:/home", "/root", "/root", ""},
		{"the home not known", "~/media:/media", "", "", "services.web.volumes[0].source: ~/media: ~ is the home of the user hostlet runs as on the host, which is not known here: set compose.home in the host config"},
		{"another user's home", "~alice/media:/media", "/root", "", "services.web.volumes[0].source: ~alice/media: only ~ (the home of the user hostlet runs as) is expanded, not another user's home"},
		{"climbing out stays a host path", "~/../../etc:/etc:ro", "/home/ops", "/etc", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    volumes: ['" + tt.volume + "']\n"}
			pods, errs := load(t, files, compose.Options{Host: compose.Host{Home: tt.home}})
			if got := strings.Join(errs, "\n"); tt.wantErr == "" && got != "" || tt.wantErr != "" && !strings.Contains(got, tt.wantErr) {
				t.Fatalf("errors %q, want %q", errs, tt.wantErr)
			}
			if tt.wantPath == "" {
				return
			}
			if len(pods) != 1 || len(pods[0].Manifest.Volumes) != 1 || pods[0].Manifest.Volumes[0].HostPath != tt.wantPath {
				t.Errorf("pods %+v, want one bind of host path %s", pods, tt.wantPath)
			}
		})
	}
	// Away from the host (validate, diff) without compose.home, the home
	// is the command's user's, and a note says so.
	files := mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    volumes: ['~/media:/media']\n"}
	pods, _ := load(t, files, compose.Options{Host: compose.Host{Home: "/home/ci", HomeIsGuess: true}})
	if len(pods) != 1 || len(pods[0].Notes) != 1 || !strings.Contains(pods[0].Notes[0].Error(), "services.web.volumes[0].source: ~ is /home/ci here, the home of the user running this command") {
		t.Errorf("pods %+v, want a note on the guessed home", pods)
	}
	files = mapFiles{"compose.yaml": "services:\n  web:\n    image: busybox\n    env_file: ['~/.env']\n"}
	if _, errs := load(t, files, compose.Options{Host: compose.Host{Home: "/root"}}); !strings.Contains(strings.Join(errs, "\n"), "a path in a home folder depends on who runs hostlet; give a file of the project") {
		t.Errorf("env_file from ~: errors %q, want it refused", errs)
	}
}
